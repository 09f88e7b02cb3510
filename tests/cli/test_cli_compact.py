"""`evigraph compact`: sizes before and after, as text or JSON; a one-line refusal while the file is in use."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import CliResult, run_cli
from tests.store.test_compaction import hold, snapshot


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


RACED_COMPACT = """
import subprocess, sys
from evigraph.cli import main
from evigraph.store.embedded import compaction

stage, db = sys.argv[1], sys.argv[2]
holders = []

def open_from_another_process(at, path):
    # The instant named: a second process opens the database file and counts its documents.
    if at == stage and not holders:
        code = (
            "import sys; from pathlib import Path; from evigraph.store.embedded.engine import import_engine; "
            "e = import_engine('auto', Path(sys.argv[1])); "
            "conn = e.Connection(e.Database(sys.argv[1])); "
            "print(conn.execute('MATCH (d:Document) RETURN count(d)').get_next()[0], flush=True); sys.stdin.read()"
        )
        holder = subprocess.Popen(
            [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        holders.append((holder, holder.stdout.readline().strip()))

compaction.swap_hook = open_from_another_process
code = main(["compact", "--db", db])
for holder, documents in holders:
    holder.stdin.close()
    holder.wait()
    print(f"holder saw {documents} documents", file=sys.stderr)
sys.exit(code)
"""
"""`evigraph compact` in a process whose compaction lets a second process open the file at `stage`."""


def raced_compact(db: Path, stage: str) -> CliResult:
    proc = subprocess.run(
        [sys.executable, "-c", RACED_COMPACT, stage, str(db)],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def test_a_process_opening_the_compacted_file_before_compact_reopens_it_gets_the_truth(shrunk: Path) -> None:
    """The swap happened: exit 0 with the sizes, and a note that this process could not reopen the file."""
    db = shrunk
    rows, inode = snapshot(db), db.stat().st_ino
    done = raced_compact(db, "replaced")
    assert done.code == 0, done.err
    sizes = re.fullmatch(r"compacted .*kb\.db: ([\d.]+) MB -> ([\d.]+) MB \(.*\)\n", done.out)
    assert sizes is not None, done.out
    assert "note: the compacted file is in place and complete" in done.err
    assert "another process is using" in done.err and "error" not in done.err
    assert "holder saw 2 documents" in done.err  # the other process had the new file, whole
    assert db.stat().st_ino != inode and abs(float(sizes[2]) * 1e6 - db.stat().st_size) < 1e5
    assert float(sizes[2]) < float(sizes[1]) and snapshot(db) == rows


def test_a_process_opening_the_file_before_the_swap_leaves_it_uncompacted_and_says_so(shrunk: Path) -> None:
    db = shrunk
    rows, inode, size = snapshot(db), db.stat().st_ino, db.stat().st_size
    refused = raced_compact(db, "released")
    assert refused.code == 1 and refused.out == ""
    assert "error: not compacted: another process opened" in refused.err and "old file was kept" in refused.err
    assert "holder saw 2 documents" in refused.err
    assert (db.stat().st_ino, db.stat().st_size) == (inode, size) and snapshot(db) == rows
