"""Ctrl-C during `evigraph ingest`: said at once, stopped in seconds, what was written kept whole."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.cli.ingest_process import IngestProcess, cli, write_corpus

from evigraph.ingest.cancel import STILL_STOPPING, STOPPING

DOCUMENTS = 1200  # about 19 batches of 64: the first is written long before the last is read


@pytest.mark.slow
def test_ctrl_c_stops_within_seconds_keeping_finished_batches(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "notes", DOCUMENTS)
    db = tmp_path / "kb.db"
    ingest = IngestProcess(corpus, db)
    try:
        ingest.wait_for(r"^created ")  # the first batch is written: the ingest is well under way
        pressed = ingest.interrupt()
        acknowledged = ingest.wait_for(r"^stopping after", stderr=True, timeout=10)
        ingest.interrupt()  # again, during the shutdown
        ingest.interrupt()
        code = ingest.finish(timeout=max(0.1, pressed + 10 - time.monotonic()))  # 10 s from the first Ctrl-C
    finally:
        ingest.kill()
    stderr = "".join(ingest.err)
    assert code == 130, stderr  # not -11 (SIGSEGV), nor 1 after a traceback
    assert acknowledged - pressed < 3, "Ctrl-C must be acknowledged at once"
    assert STOPPING in stderr and STILL_STOPPING in stderr and "Traceback" not in stderr
    assert "interrupted:" in stderr

    written = ingest.written()
    assert 0 < len(written) < DOCUMENTS, "stopped mid-ingest"
    status = cli("status", "--db", str(db), "--json", "--documents")
    assert status.returncode == 0, status.stderr
    counts = json.loads(status.stdout)
    # Every document it said it wrote is stored, and nothing else: the batch in progress was dropped.
    assert counts["documents"] == len(written)
    assert {Path(d["key"]).name for d in counts["document_list"]} == set(written)
    check = cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout + check.stderr  # no half-written document, no orphans
