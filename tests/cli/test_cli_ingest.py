"""End to end: the real `evigraph` command on real .txt, .md and .pdf files and a real database."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import engine_connection, run_cli

from evigraph.cli import main
from evigraph.kb import KnowledgeBase
from evigraph.tools.toolkit import Toolkit
from evigraph.tools.write_tools import IngestResult


def _passages(db: Path, key_suffix: str) -> list[str]:
    conn = engine_connection(db, read_only=True)
    rows = conn.execute(
        "MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE d.key ENDS WITH $s RETURN c.text ORDER BY c.`index`",
        {"s": key_suffix},
    ).get_all()
    conn.close()
    return [r[0] for r in rows]


def _entity_names(db: Path) -> set[str]:
    conn = engine_connection(db, read_only=True)
    rows = conn.execute("MATCH (e:Entity) RETURN e.name").get_all()
    conn.close()
    return {r[0] for r in rows}


def test_ingest_reingest_edit_delete_cycle(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    first = run_cli("ingest", str(corpus), "--db", str(db), "--json")
    assert first.code == 0, first.err
    statuses = {Path(d["key"]).name: d["status"] for d in first.json()["documents"]}
    assert statuses == {"lisbon.txt": "created", "reefwatch.md": "created", "tidescope.pdf": "created"}
    counts = run_cli("status", "--db", str(db), "--json").json()
    assert counts["documents"] == 3 and counts["passages"] >= 3 and counts["entities"] > 0 and counts["relations"] > 0

    again = run_cli("ingest", str(corpus), "--db", str(db), "--json")
    assert again.code == 0, again.err
    assert {d["status"] for d in again.json()["documents"]} == {"unchanged"}
    assert run_cli("status", "--db", str(db), "--json").json() == counts

    assert any("Berlengas" in p for p in _passages(db, "reefwatch.md"))
    (corpus / "reefwatch.md").write_text(
        "# ReefWatch\n\nReefWatch now films whales off the Azores with Orca Systems.\n", encoding="utf-8"
    )
    edited = run_cli("ingest", str(corpus), "--db", str(db), "--json")
    assert edited.code == 0, edited.err
    statuses = {Path(d["key"]).name: d["status"] for d in edited.json()["documents"]}
    assert statuses == {"lisbon.txt": "unchanged", "reefwatch.md": "updated", "tidescope.pdf": "unchanged"}
    passages = _passages(db, "reefwatch.md")
    assert passages and not any("Berlengas" in p for p in passages)
    assert any("Azores" in p for p in passages)
    after_edit = run_cli("status", "--db", str(db), "--json").json()
    assert after_edit["documents"] == 3

    names = _entity_names(db)
    assert "Azores" in names or "Orca Systems" in names
    deleted = run_cli("delete", str(corpus / "reefwatch.md"), "--db", str(db))
    assert deleted.code == 0, deleted.err
    final = run_cli("status", "--db", str(db), "--json").json()
    assert final["documents"] == 2
    remaining = _entity_names(db)
    assert "Azores" not in remaining and "Orca Systems" not in remaining
    assert "Harbor Lab" in remaining  # still mentioned by the other documents
    assert final["passages"] == after_edit["passages"] - len(passages)


def test_pdf_passages_keep_page_numbers(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(corpus / "tidescope.pdf"), "--db", str(db), "--quiet").code == 0
    conn = engine_connection(db, read_only=True)
    pages = {r[0] for r in conn.execute("MATCH (c:Chunk) RETURN c.page").get_all()}
    conn.close()
    assert pages <= {1, 2} and 1 in pages


def test_text_output_lists_each_file_and_a_summary(corpus: Path, tmp_path: Path) -> None:
    result = run_cli("ingest", str(corpus), "--db", str(tmp_path / "kb.db"), "--extractor", "rules")
    assert result.code == 0, result.err
    assert result.out.count("created") == 3
    assert "3 documents: 3 created" in result.err
    status = run_cli("status", "--db", str(tmp_path / "kb.db"))
    assert "documents       3" in status.out


def test_globs_and_db_from_environment(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    result = run_cli("ingest", str(corpus / "*.md"), "--json", "--extractor", "rules", env={"EVIGRAPH_DB": str(db)})
    assert result.code == 0, result.err
    assert [Path(d["key"]).name for d in result.json()["documents"]] == ["reefwatch.md"]
    assert db.exists()
    assert run_cli("status", "--json", env={"EVIGRAPH_DB": str(db)}).json()["documents"] == 1


def test_jsonl_records_become_documents(tmp_path: Path) -> None:
    records = tmp_path / "corpus.jsonl"
    records.write_text(
        "\n".join(
            json.dumps({"id": f"rec-{i}", "title": f"Record {i}", "text": f"Record {i} mentions Lisbon and Porto."})
            for i in range(5)
        ),
        encoding="utf-8",
    )
    result = run_cli("ingest", str(records), "--db", str(tmp_path / "kb.db"), "--json", "--extractor", "rules")
    assert result.code == 0, result.err
    assert sorted(d["key"] for d in result.json()["documents"]) == [f"rec-{i}" for i in range(5)]
    assert run_cli("status", "--db", str(tmp_path / "kb.db"), "--json").json()["documents"] == 5


def test_help_lists_the_verbs() -> None:
    result = run_cli("--help")
    assert result.code == 0
    for verb in ("ingest", "status", "delete"):
        assert verb in result.out


def test_a_file_ingested_by_the_cli_and_by_the_ingest_tool_is_one_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One key rule: `file:` + the root's name + the path under it, however the file was named or by
    whom; a file named alone makes its folder a root, which the files root then holds."""
    root = tmp_path / "docs"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# Harbour\n\nDr. Mira Voss runs Tidal Works Corp in Bergen.\n", "utf-8")
    (root / "b.txt").write_text("Olav Strand repairs cranes for Fjord Lift Corp in Oslo.\n", "utf-8")
    db = tmp_path / "kb.db"
    monkeypatch.chdir(root)  # the command line names the file by a relative path

    def cli(*args: str) -> dict[str, Any]:
        capsys.readouterr()
        assert main([*args, "--db", str(db), "--json"]) == 0
        parsed: dict[str, Any] = json.loads(capsys.readouterr().out)
        return parsed

    async def tool(files: list[str]) -> list[tuple[str, str]]:
        async with KnowledgeBase(db, extractor="rules") as kb:
            result = await Toolkit(kb, files_root=root).call("ingest", {"files": files})
            assert isinstance(result, IngestResult)
            return [(d.document_key, d.status) for d in result.documents]

    a_key, b_key = "file:notes/a.md", "file:docs/b.txt"
    first = cli("ingest", "notes/a.md", "--extractor", "rules")
    assert [(d["key"], d["status"]) for d in first["documents"]] == [(a_key, "created")]
    assert asyncio.run(tool(["notes/a.md"])) == [(a_key, "unchanged")]  # the CLI's document, found again
    assert asyncio.run(tool(["b.txt"])) == [(b_key, "ingested")]
    again = cli("ingest", "b.txt", "notes", "--extractor", "rules")  # the tool's document, found by the CLI
    assert {d["key"]: d["status"] for d in again["documents"]} == {a_key: "unchanged", b_key: "unchanged"}
    assert cli("status")["documents"] == 2
