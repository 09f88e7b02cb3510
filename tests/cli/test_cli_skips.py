"""`evigraph ingest` on a mixed folder: skipped types reported, globs obeyed, HTML read, encodings decoded."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from tests.conftest import engine_connection, run_cli

from evigraph.cli import main

PAGE = """<html><head><title>Harbor Lab handbook</title><script>var SECRET = 1;</script></head>
<body><nav><a href="/">NAVIGATION</a></nav>
<main><h1>Handbook</h1><p>Harbor Lab is a research group in Lisbon.</p>
<h2>People</h2><p>Marta Oliveira founded Harbor Lab in 2014.</p>
<h3>Divers</h3><p>Ana Costa leads the dive team.</p></main></body></html>
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "api").mkdir(parents=True)
    (root / "img").mkdir()
    (root / "handbook.html").write_text(PAGE, encoding="utf-8")
    (root / "readme.md").write_text("# Readme\n\nTideScope stores data in Kuzu.\n", encoding="utf-8")
    (root / "api" / "draft.md").write_text("# Draft\n\nNot ready.\n", encoding="utf-8")
    for name in ("main.py", "api/views.py", "api/models.py"):
        (root / name).write_text("print('hello')\n", encoding="utf-8")
    (root / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    (root / "img" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    return root


def _breadcrumbs(db: Path, key_suffix: str) -> list[tuple[tuple[str, ...], str]]:
    conn = engine_connection(db, read_only=True)
    rows = conn.execute(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE d.key ENDS WITH $s "
        "RETURN c.breadcrumbs, c.text ORDER BY c.`index`",
        {"s": key_suffix},
    ).get_all()
    conn.close()
    return [(tuple(r[0] or ()), r[1]) for r in rows]


def test_a_mixed_folder_reports_skips_by_extension_and_html_has_breadcrumbs(site: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    result = run_cli("ingest", str(site), "--db", str(db), "--extractor", "rules")
    assert result.code == 0, result.err
    assert "skipped 5 files no loader reads: .py 3, .png 1, .yml 1 (name a file to ingest it as text)" in result.err
    assert "excluded" not in result.err
    crumbs = dict(_breadcrumbs(db, "handbook.html"))
    assert any("Marta Oliveira" in text for path, text in crumbs.items() if path[:2] == ("Handbook", "People"))
    assert ("Handbook", "People", "Divers") in crumbs
    assert not any("SECRET" in text or "NAVIGATION" in text for text in crumbs.values())


def test_json_reports_skipped_and_excluded(site: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    result = run_cli(
        "ingest", str(site), "--db", str(db), "--json", "--extractor", "rules", "--exclude", "api", "--exclude", "*.yml"
    )
    assert result.code == 0, result.err
    payload = result.json()
    assert sorted(Path(d["key"]).name for d in payload["documents"]) == ["handbook.html", "readme.md"]
    assert payload["skipped"] == {".png": 1, ".py": 1}  # main.py; api/ and mkdocs.yml were excluded
    assert payload["excluded"] == 4


def test_include_globs_repeatable_and_comma_separated(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "kb.db"
    code = main(["ingest", str(site), "--db", str(db), "--extractor", "rules", "--include", "*.md,*.py"])
    assert code == 0
    err = capsys.readouterr().err
    assert "2 created" in err and "skipped 3 files no loader reads: .py 3" in err
    assert "excluded 3 files by --include/--exclude" in err  # handbook.html, mkdocs.yml, logo.png
    again = ["ingest", str(site), "--db", str(tmp_path / "kb2.db"), "--json", "--extractor", "rules"]
    assert main([*again, "--include", "api/*", "--include", "*.png"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [Path(d["key"]).name for d in payload["documents"]] == ["draft.md"]
    assert payload["skipped"] == {".png": 1, ".py": 2}


def test_a_typo_in_a_glob_leaves_everything_out_visibly(site: Path, tmp_path: Path) -> None:
    result = run_cli("ingest", str(site), "--db", str(tmp_path / "kb.db"), "--include", "*.mdx")
    assert result.code == 0
    assert "0 documents: nothing to do" in result.err and "excluded 8 files by --include/--exclude" in result.err


def test_an_undecodable_file_fails_with_the_hint_and_encoding_fixes_it(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ru.txt").write_bytes("Ирина Петрова руководит лабораторией в Москве.".encode("cp1251"))
    (folder / "bom.md").write_bytes(codecs.BOM_UTF16_LE + "# Zoë\n\nZoë Martin runs Café Lune.\n".encode("utf-16-le"))
    (folder / "latin.txt").write_bytes("René Dubois repairs boats in Nantes, près du port.".encode("latin-1"))
    db = tmp_path / "kb.db"
    first = run_cli("ingest", str(folder), "--db", str(db), "--json", "--extractor", "rules")
    assert first.code == 1
    docs = {Path(d["key"]).name: d for d in first.json()["documents"]}
    assert docs["bom.md"]["status"] == "created" and docs["latin.txt"]["status"] == "created"
    assert docs["ru.txt"]["status"] == "failed" and "--encoding" in docs["ru.txt"]["error"]
    second = run_cli("ingest", str(folder / "ru.txt"), "--db", str(db), "--json", "--encoding", "cp1251")
    assert second.code == 0, second.err
    assert [d["status"] for d in second.json()["documents"]] == ["created"]
    third = run_cli("ingest", str(folder), "--db", str(db), "--json", "--include", "*.md", "--encoding", "cp1251")
    assert third.code == 0, third.err  # a file with a byte order mark is never re-read as the named encoding
    assert [(Path(d["key"]).name, d["status"]) for d in third.json()["documents"]] == [("bom.md", "unchanged")]
    status = run_cli("status", "--db", str(db), "--json").json()
    assert status["documents"] == 3


def test_a_bad_encoding_name_is_an_error_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Lisbon is in Portugal.", encoding="utf-8")
    result = run_cli("ingest", str(tmp_path / "a.txt"), "--db", str(tmp_path / "kb.db"), "--encoding", "klingon")
    assert result.code == 1
    assert "unknown text encoding 'klingon'" in result.err and "cp1252" in result.err


def test_help_documents_the_new_options() -> None:
    result = run_cli("ingest", "--help")
    assert result.code == 0
    for flag in ("--include", "--exclude", "--encoding", "repeatable"):
        assert flag in result.out
