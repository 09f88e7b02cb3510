"""A file name cannot forge a line of what the `evigraph` command prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli

from evigraph.display import display_name, display_text

pytestmark = pytest.mark.slow
# Each name, printed raw, would add a line that reports a document that was never ingested
# (a file name cannot hold "/", so the forged keys have none either).
FORGED = "x (1 passages, 1 entities, 0 relations)\ncreated    file:shadow (9 passages).txt"
FORGED_FAILURE = "y\nfailed     file:passwd: forged.txt"


def test_display_escapes_what_would_break_a_line() -> None:
    assert display_name("file:/docs/plain name.txt") == "file:/docs/plain name.txt"
    assert display_name("a\nb") == "'a\\nb'"
    assert display_name("a\rb\x1b[2Kc\u202ed") == "'a\\rb\\x1b[2Kc\\u202ed'"
    assert display_name("bad\udcffbyte") == "'bad\\udcffbyte'"  # a non-UTF-8 name read with surrogateescape
    assert display_name("'a\\nb'") != display_name("a\nb")  # a name that looks escaped is quoted too
    assert display_text("cannot read a\nb: broken") == "cannot read a\\nb: broken"
    assert display_text("it's fine") == "it's fine"
    assert display_text("no-break\u00a0space") == "no-break\u00a0space"  # unusual but harmless: kept


def test_names_with_newlines_stay_on_their_own_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plain.txt").write_text("Ada Quillfeather founded Quillworks in Lisbon.", encoding="utf-8")
    (docs / FORGED).write_text("Boris Marrowind runs Marrowind Shipping in Porto.", encoding="utf-8")
    (docs / FORGED_FAILURE).write_bytes(b"\x7fELF\x00\x00\x01\x02" * 64)  # binary: fails
    db = tmp_path / "kb.db"

    ingest = run_cli("ingest", str(docs), "--db", str(db), "--extractor", "rules")
    assert ingest.code == 1, ingest.err  # the binary file failed, the others were stored
    out = ingest.out.splitlines()
    assert len(out) == 2, out
    assert all(line.startswith("created    ") for line in out)
    forged_line = next(line for line in out if "shadow" in line)
    assert "\\ncreated    file:shadow" in forged_line
    err = [line for line in ingest.err.splitlines() if line.strip()]
    # one failure line, the saved retrieval indexes, then the summary
    assert [line.split()[0] for line in err] == ["failed", "saved", "3"], err
    assert "\\nfailed     file:passwd" in err[0]

    status = run_cli("status", "--db", str(db), "--documents")
    assert status.code == 0, status.err
    listed = [line for line in status.out.splitlines() if line.startswith("  ")]
    assert len(listed) == 3, status.out  # the two documents, then the failed file with its error
    assert "  failed  " in listed[2] and "\\nfailed     file:passwd" in listed[2]
    assert not any(line.startswith(("created", "failed     file:")) for line in status.out.splitlines())

    # The title (the file's stem) labels the passage: it must not start a numbered evidence line.
    search = run_cli("search", "Who runs Marrowind Shipping?", "--db", str(db))
    assert search.code == 0, search.err
    assert "\\ncreated    file:shadow" in search.out
    assert not any(line.startswith("created") for line in search.out.splitlines())

    deleted = run_cli("delete", str(docs / FORGED), "--db", str(db))
    assert deleted.code == 0, deleted.err
    assert deleted.out.count("\n") == 1 and deleted.out.startswith("deleted '") and "\\ncreated" in deleted.out
