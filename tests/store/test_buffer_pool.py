"""The engine's page cache grows with the machine, and a bad setting is refused with the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evigraph.errors import StoreError
from evigraph.store.embedded.engine import (
    BUFFER_POOL_ENV,
    MAX_BUFFER_POOL_MB,
    MIN_BUFFER_POOL_MB,
    default_buffer_pool_mb,
)
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.store import EmbeddedStore


def test_a_quarter_of_memory_within_floor_and_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUFFER_POOL_ENV, raising=False)
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    assert default_buffer_pool_mb() == min(max(total_mb // 4, MIN_BUFFER_POOL_MB), MAX_BUFFER_POOL_MB)


def test_the_variable_sets_it_and_a_bad_value_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(BUFFER_POOL_ENV, "2048")
    assert default_buffer_pool_mb() == 2048
    assert EmbeddedStore(tmp_path / "kb.db").buffer_pool_mb == 2048
    assert EmbeddedStore(tmp_path / "kb.db", buffer_pool_mb=300).buffer_pool_mb == 300  # an argument wins
    monkeypatch.setenv(BUFFER_POOL_ENV, "lots")
    with pytest.raises(StoreError, match="not a number of megabytes") as refused:
        default_buffer_pool_mb()
    assert BUFFER_POOL_ENV in (refused.value.hint or "")


async def test_a_reader_is_sized_from_its_file_and_still_reads_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A long-lived reader's pool fills and is never evicted, so it is sized from the file."""
    monkeypatch.delenv(BUFFER_POOL_ENV, raising=False)
    from evigraph import KnowledgeBase
    from evigraph.store.embedded.engine import MIN_READER_POOL_MB

    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text="Ana Costa leads ReefWatch, a camera network near the Berlengas.", key="reef")
    writer_pool = EmbeddedStore(db).buffer_pool_mb
    reader = EmbeddedStore(db, read_only=True)
    assert writer_pool == default_buffer_pool_mb()  # writers keep the machine's cap: ingests grow files
    assert reader.buffer_pool_mb == min(writer_pool, MIN_READER_POOL_MB)  # a small file: the floor
    padding = tmp_path / "big.db"
    with padding.open("wb") as handle:  # a sparse 600 MB file: its size is what the rule reads
        handle.truncate(600 << 20)
    assert default_buffer_pool_mb(padding, read_only=True) == min(writer_pool, 600 * 3 // 2 + 128)
    assert default_buffer_pool_mb(padding) == writer_pool
    async with KnowledgeBase(db, read_only=True) as kb:  # and the reader works within it
        result = await kb.retrieve("Who leads ReefWatch?")
        assert any("Ana Costa" in p.text for p in result.passages)


@pytest.mark.parametrize(("pool_mb", "log_mb"), [(512, 16), (2048, 2048 // 48), (6144, 128), (16_384, 128)])
async def test_a_writer_lets_its_log_grow_with_its_pool_and_a_reader_keeps_the_engines(
    tmp_path: Path, pool_mb: int, log_mb: int
) -> None:
    """The log a commit checkpoints at follows the page cache (`checkpoint_threshold_mb`): the
    engine's 16 MB at the floor, 128 MB at most; a read-only open checkpoints nothing."""
    from evigraph.store.embedded.engine import ENGINE_CHECKPOINT_MB, checkpoint_threshold_mb

    assert checkpoint_threshold_mb(pool_mb) == log_mb

    def setting(tx: Tx) -> int:
        return int(tx.rows("CALL current_setting('checkpoint_threshold') RETURN *")[0]["checkpoint_threshold"])

    db = tmp_path / "kb.db"
    async with EmbeddedStore(db, buffer_pool_mb=pool_mb) as store:
        assert await store.executor.read(setting) == log_mb << 20
    async with EmbeddedStore(db, read_only=True, buffer_pool_mb=pool_mb) as store:
        assert await store.executor.read(setting) == ENGINE_CHECKPOINT_MB << 20
