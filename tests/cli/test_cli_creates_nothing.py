"""An ingest that finds nothing to ingest leaves no empty knowledge base (nor its folders) behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli

from evigraph import KnowledgeBase


def test_every_path_wrong_creates_no_database_nor_folder(tmp_path: Path) -> None:
    db = tmp_path / "new" / "folder" / "kb.db"
    done = run_cli("ingest", str(tmp_path / "missing.md"), str(tmp_path / "nope" / "*.md"), "--db", str(db))
    assert done.code == 1 and "failed" in done.err and "missing.md" in done.err
    assert not (tmp_path / "new").exists()


async def test_a_wrong_path_beside_an_existing_knowledge_base_still_logs_its_failure(tmp_path: Path) -> None:
    good = tmp_path / "a.txt"
    good.write_text("Ana Costa leads ReefWatch.", encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        assert (await kb.ingest([good])).ok
        report = await kb.ingest([tmp_path / "missing.txt"])
        assert [d.status.value for d in report.documents] == ["failed"]
        assert (await kb.status()).documents == 1
    async with KnowledgeBase(tmp_path / "other.db") as fresh:
        report = await fresh.ingest(text="Harbor Lab is in Lisbon.", key="note")
        assert report.ok and (tmp_path / "other.db").exists()  # text always creates


@pytest.mark.parametrize(
    "verb",
    [("status",), ("search", "anything"), ("check", "--repair"), ("delete", "note"), ("compact",), ("finalize",)],
    ids=lambda verb: verb[0],
)
def test_a_db_in_a_missing_folder_is_not_created_by_verbs_that_add_no_content(
    tmp_path: Path, verb: tuple[str, ...]
) -> None:
    db = tmp_path / "missing" / "folder" / "kb.db"
    done = run_cli(*verb, "--db", str(db))
    assert done.code == 1 and "no knowledge base" in done.err, done.err
    assert not (tmp_path / "missing").exists()
