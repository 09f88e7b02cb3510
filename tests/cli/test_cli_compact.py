"""`evigraph compact`: sizes before and after, as text or JSON; a one-line refusal while the file is in use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.store.test_compaction import hold


@pytest.fixture
def shrunk(corpus: Path, tmp_path: Path) -> Path:
    """A knowledge base of the three-file corpus, one of which was deleted."""
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(corpus), "--db", str(db), "-q", "--extractor", "rules").code == 0
    assert run_cli("delete", str(corpus / "lisbon.txt"), "--db", str(db)).code == 0
    return db


def test_compact_prints_the_sizes_and_keeps_what_the_knowledge_base_holds(shrunk: Path) -> None:
    db = shrunk
    status = run_cli("status", "--db", str(db), "--json").json()
    found = run_cli("search", "Who leads ReefWatch?", "--db", str(db), "--json").json()
    done = run_cli("compact", "--db", str(db))
    assert done.code == 0, done.err
    sizes = re.fullmatch(
        r"compacted .*kb\.db: ([\d.]+) MB -> ([\d.]+) MB \((\d+)% smaller; \d+ rows copied in [\d.]+ s\)\n", done.out
    )
    assert sizes is not None, done.out
    assert float(sizes[2]) < float(sizes[1]) and abs(float(sizes[2]) * 1e6 - db.stat().st_size) < 1e5
    assert run_cli("status", "--db", str(db), "--json").json() == status
    assert run_cli("search", "Who leads ReefWatch?", "--db", str(db), "--json").json() == found

    again = run_cli("compact", "--db", str(db), "--json")
    assert again.code == 0, again.err
    report = again.json()
    assert report["replaced"] is False and report["bytes_after"] == report["bytes_before"] > 0
    assert set(report) >= {"db", "bytes_before", "bytes_after", "saved", "rows", "seconds", "replaced"}


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "reader"])
def test_compact_refuses_in_one_line_while_another_process_has_the_file(shrunk: Path, read_only: bool) -> None:
    db = shrunk
    inode, size = db.stat().st_ino, db.stat().st_size
    holder = hold(db, read_only=read_only)
    try:
        refused = run_cli("compact", "--db", str(db))
        as_json = run_cli("compact", "--db", str(db), "--json")
    finally:
        holder.kill()
        holder.wait()
    assert refused.code == 1 and refused.out == ""
    assert refused.err.count("\n") == 1 and "another process is using it" in refused.err
    assert "evigraph mcp" in refused.err  # the hint says what to stop
    assert as_json.code == 1 and "another process" in as_json.json()["error"]
    assert (db.stat().st_ino, db.stat().st_size) == (inode, size)
