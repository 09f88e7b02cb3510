"""The write-ahead log a checkpoint waits for grows with the file, within a floor and a cap."""

from __future__ import annotations

from pathlib import Path

from tests.store.contract.conftest import ALPHA

from evigraph.store import connect
from evigraph.store.embedded.checkpoints import CAP_BYTES, FLOOR_BYTES, POOL_SHARE, SHARE, CheckpointPacing, threshold


def test_threshold_is_a_share_of_the_file_between_floor_and_cap() -> None:
    assert threshold(0) == FLOOR_BYTES  # a new knowledge base checkpoints as the engine always did
    assert threshold(100 << 20) == int((100 << 20) * SHARE)
    assert threshold(1 << 40) == CAP_BYTES
    assert threshold(1 << 40, pool_bytes=512 << 20) == int((512 << 20) * POOL_SHARE)  # the pool bounds it
    assert threshold(1 << 40, pool_bytes=1 << 20) == FLOOR_BYTES  # never below the engine default
    sizes = [threshold(n << 20) for n in range(0, 4096, 64)]
    assert sizes == sorted(sizes)


def _setting(store: object) -> int:
    executor = store.executor  # type: ignore[attr-defined]
    rows = executor.read_sync(lambda tx: tx.rows("CALL current_setting('checkpoint_threshold') RETURN *"))
    return int(next(iter(rows[0].values())))


async def test_a_write_sets_the_engine_threshold_from_the_file_size(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
        assert _setting(store) == threshold(path.stat().st_size)
        # a file grown to 600 MB (sparse: it takes no disk) moves the threshold with it
        grown = tmp_path / "grown"
        with grown.open("wb") as f:
            f.truncate(600 << 20)
        pacing = CheckpointPacing(grown, 4 << 30)
        store.executor.write_sync(pacing.pace)  # type: ignore[attr-defined]
        assert _setting(store) == threshold(600 << 20) == pacing.current > threshold(path.stat().st_size)
        assert store._checkpoints.pool_bytes == store.buffer_pool_mb << 20  # type: ignore[attr-defined]
