"""Relocatable keys end to end: a moved folder is found unchanged, two folders of one name stay
apart, and absolute keys of an older knowledge base are renamed without re-ingesting."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import run_cli, write_corpus

from evigraph.ingest.roots import ROOTS_SETTING
from evigraph.kb import KnowledgeBase

FILES = {"lisbon.txt", "reefwatch.md", "tidescope.pdf"}


def ingest(db: Path, *args: str) -> dict[str, str]:
    result = run_cli("ingest", *args, "--db", str(db), "--json", "--extractor", "rules")
    assert result.code == 0, result.err
    return {d["key"]: d["status"] for d in result.json()["documents"]}


def test_a_moved_folder_reingested_is_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    docs = write_corpus(tmp_path / "home" / "docs")
    first = ingest(db, str(docs))
    assert first == {f"file:docs/{name}": "created" for name in FILES}
    moved = tmp_path / "mnt" / "docs"
    moved.parent.mkdir()
    shutil.move(docs, moved)
    again = run_cli("ingest", str(moved), "--db", str(db), "--extractor", "rules")
    assert again.code == 0, again.err
    assert f"root docs now at {moved.resolve().as_posix()}" in again.err
    assert ingest(db, str(moved)) == {f"file:docs/{name}": "unchanged" for name in FILES}
    renamed = tmp_path / "mnt" / "documents"  # renamed too: say which root it is
    shutil.move(moved, renamed)
    assert ingest(db, str(renamed), "--root", "docs") == {f"file:docs/{name}": "unchanged" for name in FILES}
    assert run_cli("status", "--db", str(db), "--json").json()["documents"] == 3


def test_two_folders_of_one_name_stay_apart(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    ingest(db, str(write_corpus(tmp_path / "a" / "docs")))
    other = write_corpus(tmp_path / "b" / "docs")
    refused = run_cli("ingest", str(other), "--db", str(db), "--extractor", "rules")
    assert refused.code == 1
    assert "--root OTHER_NAME" in refused.err and "like the root already at" in refused.err
    assert run_cli("status", "--db", str(db), "--json").json()["documents"] == 3  # nothing lost
    assert set(ingest(db, str(other), "--root", "docs-b").values()) == {"created"}
    assert run_cli("status", "--db", str(db), "--json").json()["documents"] == 6


async def _make_legacy(db: Path, docs: Path) -> None:
    """Keys as an earlier release wrote them: `file:` + the absolute path, no roots remembered."""
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest([docs])
        store = await kb._open(for_write=True)
        await store.rename_documents({f"file:docs/{n}": f"file:{(docs / n).resolve().as_posix()}" for n in FILES})
        await store.set_setting(ROOTS_SETTING, None)


async def test_absolute_keys_are_renamed_at_ingest_and_by_migrate(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    docs = write_corpus(tmp_path / "docs")
    await _make_legacy(db, docs)
    listed = run_cli("migrate", "--db", str(db))
    assert listed.code == 1 and docs.resolve().as_posix() in listed.out
    assert ingest(db, str(docs)) == {f"file:docs/{n}": "unchanged" for n in FILES}

    db2 = tmp_path / "kb2.db"
    await _make_legacy(db2, docs)
    old = docs.resolve().as_posix()
    moved = tmp_path / "elsewhere" / "docs"
    moved.parent.mkdir()
    shutil.move(docs, moved)
    missing = run_cli("migrate", str(tmp_path / "nowhere"), "--db", str(db2))
    assert missing.code != 0 and "no document is keyed under" in missing.err and "evigraph migrate" in missing.err
    done = run_cli("migrate", old, "--db", str(db2), "--json")
    assert done.code == 0, done.err
    assert sorted(done.json()["renamed"].values()) == sorted(f"file:docs/{n}" for n in FILES)
    assert ingest(db2, str(moved)) == {f"file:docs/{n}": "unchanged" for n in FILES}
    assert run_cli("check", "--db", str(db2)).code == 0


async def test_python_ingest_keys_by_root_and_finds_a_moved_folder(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "a" / "corpus")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        first = await kb.ingest([docs])
        assert {d.key for d in first.documents} == {f"file:corpus/{n}" for n in FILES}
        assert first.roots_moved == {}
        moved = tmp_path / "b" / "corpus"
        moved.parent.mkdir()
        shutil.move(docs, moved)
        again = await kb.ingest([moved])
        assert {d.status for d in again.documents} == {"unchanged"} and len(again.documents) == 3
        assert again.roots_moved == {"corpus": moved.resolve().as_posix()}
        assert await kb.document_roots() == {"corpus": moved.resolve().as_posix()}
        assert await kb.file_key(moved / "lisbon.txt") == "file:corpus/lisbon.txt"


def test_one_root_name_for_two_folders_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    one, two = write_corpus(tmp_path / "x" / "a"), write_corpus(tmp_path / "y" / "b")
    refused = run_cli("ingest", str(one), str(two), "--root", "docs", "--db", str(db), "--extractor", "rules")
    assert refused.code != 0 and "names one folder" in refused.err
    assert not db.exists()  # no root, no knowledge base written
