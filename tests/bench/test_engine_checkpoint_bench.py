"""The engine-checkpoint bench (bench/engine_checkpoint.py) on the real embedded engine, at a tiny size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.bench.loading import BENCH, load_bench

bench = load_bench("engine_checkpoint")

TINY = {"entities": 300, "relations": 400, "sources": 3.0, "fact_chars": 40, "rows": 50, "rounds": 2, "pool_mb": 256}


def test_every_shape_writes_all_its_rows_each_round() -> None:
    result = bench.phase_engine("ladybug", TINY)  # the test process's engine
    trials = result["trials"]
    assert [(t["round"], t["shape"]) for t in trials] == [(r, s) for r in range(2) for s in bench.SHAPES]
    # a shape whose statement matched nothing would time an empty checkpoint
    assert all(t["rows"] == TINY["rows"] for t in trials)
    assert all(t["checkpoint_s"] > 0 and t["statement_s"] > 0 for t in trials)
    assert result["engine"] == "ladybug" and result["file_mb"] > 0
    summary = bench.summarise(result)
    assert summary["vs_new_mentions"][bench.BASELINE_SHAPE] == 1.0
    assert set(summary["checkpoint_s"]) == set(bench.SHAPES)


def test_an_engine_that_cannot_run_is_reported_as_skipped(tmp_path: Path) -> None:
    sizes = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]
    script = str(BENCH / "engine_checkpoint.py")
    done = subprocess.run(
        [sys.executable, script, "--out", str(tmp_path), "--engines", "kuzu,nosuch", *sizes],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "engine-checkpoint.json").read_text())
    assert list(report["engines"]) == ["kuzu"]
    assert "unknown engine 'nosuch'" in report["skipped"]["nosuch"]
    assert report["engines"]["kuzu"]["vs_first_engine"] == dict.fromkeys(bench.SHAPES, 1.0)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--rows", "0"], "0 is not above zero"),
        (["--sources", "-1"], "-1 is not above zero"),
        (["--rows", "500", "--relations", "400"], "--rows 500 is more than --relations 400"),
        (["--engines", " , "], "--engines names no engine"),
    ],
)
def test_sizes_that_cannot_be_run_are_refused_before_any_work(tmp_path: Path, argv: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "engine_checkpoint.py"), "--out", str(tmp_path / "out"), *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2 and says in done.stderr
    assert not (tmp_path / "out").exists()  # nothing written
