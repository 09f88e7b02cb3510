"""Bench scripts without their data stop at once, non-zero, saying where the data belongs.

A clone has no `../shared/bench`: the README's bench command used to fail every phase and still
exit 0. These run the real scripts in a process, as a user would, with the data missing; no
benchmark runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.bench.loading import BENCH

DATASET_SCRIPTS = ["retrieval", "tools", "mcp_load", "soak", "llm_cost", "serving_memory", "coldstart"]
CORPUS_SCRIPTS = ["ingest", "crash"]


def run_bench(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def assert_says_where_the_data_belongs(proc: subprocess.CompletedProcess[str], missing: str) -> None:
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "bench data not found" in proc.stderr and missing in proc.stderr
    assert "../shared/bench/README.md" in proc.stderr and "corpus.jsonl and questions.jsonl" in proc.stderr


@pytest.mark.parametrize("script", DATASET_SCRIPTS + CORPUS_SCRIPTS)
def test_missing_data_fails_loudly_before_any_phase(script: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-data"
    out = tmp_path / "out"
    args = ["--corpus", str(missing / "corpus.jsonl")] if script in CORPUS_SCRIPTS else ["--data", str(missing)]
    proc = run_bench(script, *args, "--out", str(out), cwd=tmp_path)
    assert_says_where_the_data_belongs(proc, str(missing))
    assert not out.exists()  # nothing was run, nothing written


def test_retrieval_from_a_clone_without_the_shared_data(tmp_path: Path) -> None:
    """The README command as written, from a checkout with no `../shared/bench` beside it."""
    repo = tmp_path / "evigraph"
    repo.mkdir()
    proc = run_bench("retrieval", "--data", "../shared/bench", "--out", "bench/out", cwd=repo)
    assert_says_where_the_data_belongs(proc, "../shared/bench")
    empty = tmp_path / "empty"
    (empty / "musique").mkdir(parents=True)  # a dataset folder without its files
    proc = run_bench("retrieval", "--data", str(empty), "--out", str(tmp_path / "out"), cwd=repo)
    assert_says_where_the_data_belongs(proc, str(empty))
