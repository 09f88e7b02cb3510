"""Bad input: each gives one clear line naming the fix, the rest of the batch ingests, nothing is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pypdf import PdfWriter
from tests.conftest import ENGINE_IMPORT, CliResult, engine_connection, make_pdf, run_cli


@pytest.fixture
def stored(corpus: Path, tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A knowledge base that already holds the corpus, and its counts."""
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(corpus), "--db", str(db), "--quiet", "--extractor", "rules").code == 0
    return db, run_cli("status", "--db", str(db), "--json").json()


def _batch(db: Path, bad: Path, good: Path, *extra: str) -> CliResult:
    return run_cli("ingest", str(bad), str(good), "--db", str(db), "--json", "--extractor", "rules", *extra)


def _check_batch(result: CliResult, bad_name: str, *needles: str) -> str:
    """The bad source failed with a one-line error naming the fix; the good one was ingested."""
    assert result.code == 1
    docs = result.json()["documents"]
    failed = [d for d in docs if d["status"] == "failed"]
    assert len(failed) == 1 and bad_name in failed[0]["key"]
    error = failed[0]["error"]
    assert "\n" not in error
    for needle in needles:
        assert needle.lower() in error.lower(), error
    assert any(d["status"] == "created" for d in docs)
    return str(error)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.txt"
    path.write_text("Lisbon is the capital of Portugal. Porto is in the north.", encoding="utf-8")
    return path


Maker = Callable[[Path], Path]


def _binary(p: Path) -> Path:
    p.write_bytes(b"\x7fELF\x00\x00\x01\x02" * 64)
    return p


def _cyrillic(p: Path) -> Path:
    """cp1251 bytes: not UTF-8, and not believable as Latin-1, so the encoding must be named."""
    p.write_bytes("\u041c\u043e\u0441\u043a\u0432\u0430 \u0441\u0442\u043e\u043b\u0438\u0446\u0430".encode("cp1251"))
    return p


def _empty(p: Path) -> Path:
    p.write_text("   \n\n", encoding="utf-8")
    return p


def _malformed_pdf(p: Path) -> Path:
    p.write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    return p


def _encrypted_pdf(p: Path) -> Path:
    plain = make_pdf(p.with_name("plain.bin"), ["Secret page about Lisbon."])
    writer = PdfWriter(clone_from=str(plain))
    writer.encrypt(user_password="secret", owner_password="owner")
    with p.open("wb") as fh:
        writer.write(fh)
    return p


@pytest.mark.parametrize(
    ("name", "make", "needles"),
    [
        ("blob.txt", _binary, ["binary"]),
        ("cyrillic.txt", _cyrillic, ["utf-8", "--encoding", "iconv"]),
        ("empty.md", _empty, ["empty"]),
        ("broken.pdf", _malformed_pdf, ["pdf"]),
        ("locked.pdf", _encrypted_pdf, ["encrypt", "decrypt"]),
    ],
)
def test_bad_file_fails_alone_and_loses_nothing(
    stored: tuple[Path, dict[str, int]],
    good: Path,
    tmp_path: Path,
    name: str,
    make: Maker,
    needles: list[str],
) -> None:
    db, before = stored
    bad = make(tmp_path / name)
    _check_batch(_batch(db, bad, good), name, *needles)
    after = run_cli("status", "--db", str(db), "--json").json()
    assert after["documents"] == before["documents"] + 1
    assert after["passages"] > before["passages"]


def test_missing_path_fails_with_hint(stored: tuple[Path, dict[str, int]], good: Path, tmp_path: Path) -> None:
    db, before = stored
    _check_batch(_batch(db, tmp_path / "nope.md", good), "nope.md", "no such file", "check the path")
    assert run_cli("status", "--db", str(db), "--json").json()["documents"] == before["documents"] + 1


def test_folder_without_supported_files(stored: tuple[Path, dict[str, int]], good: Path, tmp_path: Path) -> None:
    db, _ = stored
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n")
    _check_batch(_batch(db, folder, good), "images", "no supported files", "supported")


def test_file_over_size_limit(stored: tuple[Path, dict[str, int]], good: Path, tmp_path: Path) -> None:
    db, _ = stored
    big = tmp_path / "big.txt"
    big.write_text("Lisbon. " * 2000, encoding="utf-8")
    _check_batch(_batch(db, big, good, "--max-file-mb", "0.005"), "big.txt", "max-file-mb")


def test_not_a_regular_file(stored: tuple[Path, dict[str, int]], good: Path, tmp_path: Path) -> None:
    db, _ = stored
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    _check_batch(_batch(db, fifo, good), "pipe.txt", "not a regular file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_file(stored: tuple[Path, dict[str, int]], good: Path, tmp_path: Path) -> None:
    db, _ = stored
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden", encoding="utf-8")
    secret.chmod(0)
    _check_batch(_batch(db, secret, good), "secret.txt", "permission")


@pytest.mark.parametrize("kind", ["text file", "folder", "foreign database"])
def test_db_that_is_not_a_knowledge_base(tmp_path: Path, good: Path, kind: str) -> None:
    db = tmp_path / "other.db"
    if kind == "text file":
        db.write_text("not a database\n" * 100, encoding="utf-8")
    elif kind == "folder":
        db.mkdir()
    else:
        conn = engine_connection(db)
        conn.execute("CREATE NODE TABLE Person(name STRING PRIMARY KEY)")
        conn.execute("CREATE (:Person {name: 'Ada'})")
        conn.close()
    before = db.read_bytes() if db.is_file() else None
    for args in (["ingest", str(good)], ["status"]):
        result = run_cli(*args, "--db", str(db))
        assert result.code == 1
        assert "not an evigraph" in result.err and "--db" in result.err
        assert result.err.count("\n") == 1
    if kind == "foreign database":
        conn = engine_connection(db)
        assert conn.execute("MATCH (p:Person) RETURN p.name").get_all() == [["Ada"]]
        assert {r[0] for r in conn.execute("CALL SHOW_TABLES() RETURN name").get_all()} == {"Person"}
    elif before is not None:
        assert db.read_bytes() == before


def test_status_of_missing_knowledge_base_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    result = run_cli("status", "--db", str(db))
    assert result.code == 1
    assert "no knowledge base" in result.err and "evigraph ingest" in result.err
    assert not db.exists()


@pytest.mark.parametrize(
    "verb", [("check",), ("check", "--repair"), ("delete", "notes/a.md")], ids=["check", "repair", "delete"]
)
def test_a_mistyped_db_is_not_created_by_check_or_delete(tmp_path: Path, verb: tuple[str, ...]) -> None:
    db = tmp_path / "typo.db"
    result = run_cli(*verb, "--db", str(db))
    assert result.code == 1
    assert "no knowledge base" in result.err and "evigraph ingest" in result.err
    assert list(tmp_path.iterdir()) == []


def test_database_held_by_another_process(stored: tuple[Path, dict[str, int]], good: Path) -> None:
    db, before = stored
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"{ENGINE_IMPORT}; import time; p = {str(db)!r}; d = import_engine('auto', Path(p)).Database(p); "
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = run_cli("ingest", str(good), "--db", str(db))
        assert result.code == 1
        assert "another process" in result.err and "retry" in result.err
        assert result.err.count("\n") == 1
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.2)
    assert run_cli("status", "--db", str(db), "--json").json() == before


def test_delete_unknown_key(stored: tuple[Path, dict[str, int]]) -> None:
    db, before = stored
    result = run_cli("delete", "file:/no/such/doc.md", "--db", str(db))
    assert result.code == 1 and "no document with key" in result.err
    assert run_cli("status", "--db", str(db), "--json").json() == before
