"""Document roots at the knowledge base: every way a file is ingested gives it one key, a refused
folder takes none of its files in, and `migrate_keys` places folders as ingest does."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evigraph.errors import InputError
from evigraph.ingest.files_root import FilesRoot
from evigraph.ingest.roots import ROOTS_SETTING, check_root_name
from evigraph.kb import KnowledgeBase
from evigraph.models import IngestStatus


def note(folder: Path, name: str = "a.md", text: str = "Ada Lovelace wrote notes on the Engine.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


async def keys(kb: KnowledgeBase) -> set[str]:
    store = await kb._open(for_write=False)
    return {d.key for d in await store.list_documents(100)}


async def test_a_refused_folder_takes_none_of_its_subfolders_in(tmp_path: Path) -> None:
    note(tmp_path / "a" / "docs")
    note(tmp_path / "b" / "docs", "y.md")
    note(tmp_path / "b" / "docs" / "sub", "z.md", "Grace Hopper wrote COBOL.")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest([tmp_path / "a" / "docs"], progress=False)
        report = await kb.ingest([tmp_path / "b" / "docs"], progress=False)
        [refused] = report.documents
        assert refused.status == IngestStatus.failed and "--root OTHER_NAME" in (refused.error or "")
        assert await kb.document_roots() == {"docs": (tmp_path / "a" / "docs").resolve().as_posix()}
        assert await keys(kb) == {"file:docs/a.md"}


async def test_root_name_names_one_folder(tmp_path: Path) -> None:
    one, two = note(tmp_path / "x" / "a").parent, note(tmp_path / "y" / "b").parent
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        with pytest.raises(InputError, match="names one folder") as refused:
            await kb.ingest([one, two], root_name="docs", progress=False)
        assert "own call" in (refused.value.hint or "")
    assert not (tmp_path / "kb.db").exists()  # refused before any root was written


async def test_ingest_files_fails_a_second_folder_of_one_name(tmp_path: Path) -> None:
    first = note(tmp_path / "p" / "notes", "n1.md")
    second = note(tmp_path / "q" / "notes", "n2.md", "Grace Hopper wrote COBOL.")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest_files([first, second], progress=False)
        by_status = {d.status: d for d in report.documents}
        assert by_status[IngestStatus.created].key == "file:notes/n1.md"
        assert "--root OTHER_NAME" in (by_status[IngestStatus.failed].error or "")
        assert await keys(kb) == {"file:notes/n1.md"}


async def test_a_hidden_folder_is_a_root_named_without_its_dot(tmp_path: Path) -> None:
    hidden = note(tmp_path / ".notes").parent
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([hidden], progress=False)
        assert {d.key: d.status for d in report.documents} == {"file:notes/a.md": IngestStatus.created}


async def test_ingest_documents_keys_sources_as_ingest_does(tmp_path: Path) -> None:
    docs = note(tmp_path / "docs").parent
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest([docs], progress=False)
        again = await kb.ingest_documents([], sources=[str(docs / "a.md")], progress=False)
        assert {d.key: d.status for d in again.documents} == {"file:docs/a.md": IngestStatus.unchanged}
        assert await keys(kb) == {"file:docs/a.md"}


async def test_a_link_out_of_the_files_root_fails_under_a_root_key(tmp_path: Path) -> None:
    work = note(tmp_path / "fr" / "work", "ok.md").parent
    os.symlink(note(tmp_path / "outside", "secret.md"), work / "link.md")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest_files(["ok.md", "link.md"], root=FilesRoot(work), progress=False)
        assert {d.key: d.status for d in report.documents} == {
            "file:work/ok.md": IngestStatus.created,
            "file:work/link.md": IngestStatus.failed,
        }
        assert (await kb.migrate_keys()).legacy == {}  # nothing left that `evigraph migrate` would list forever


async def _legacy(db: Path, folders: dict[str, Path]) -> None:
    """Keys as an earlier release wrote them, `file:` + the absolute path, then the folders gone."""
    async with KnowledgeBase(db, extractor="rules") as kb:
        store = await kb._open(for_write=True)
        for name, folder in folders.items():
            await kb.ingest([folder], root_name=name, progress=False)
            await store.rename_documents(
                {f"file:{name}/{f.name}": f"file:{f.resolve().as_posix()}" for f in folder.iterdir()}
            )
        await store.set_setting(ROOTS_SETTING, None)
        assert await store.holds_legacy_keys()


async def test_migrate_keeps_two_gone_folders_of_one_name_apart(tmp_path: Path) -> None:
    one = note(tmp_path / "old1" / "notes").parent
    two = note(tmp_path / "old2" / "notes", "b.md", "Grace Hopper wrote COBOL.").parent
    await _legacy(tmp_path / "kb.db", {"n1": one, "n2": two})
    old1, old2 = one.resolve().as_posix(), two.resolve().as_posix()
    shutil.rmtree(tmp_path / "old1")
    shutil.rmtree(tmp_path / "old2")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        with pytest.raises(InputError, match="like the root already at") as refused:
            await kb.migrate_keys([old1, old2])
        assert f"OTHER_NAME={old2}" in (refused.value.hint or "")
        assert await kb.document_roots() == {}
        done = await kb.migrate_keys([old1, f"notes2={old2}"])
        assert sorted(done.renamed.values()) == ["file:notes/a.md", "file:notes2/b.md"]
        assert done.roots == {"notes": old1, "notes2": old2}


async def test_migrate_takes_a_folder_whose_path_holds_an_equals_sign(tmp_path: Path) -> None:
    year = note(tmp_path / "year=2024").parent
    await _legacy(tmp_path / "kb.db", {"y": year})
    at = year.resolve().as_posix()
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        with pytest.raises(InputError, match="cannot name a root") as refused:  # '=' is not in a root's name
            await kb.migrate_keys([at])
        assert f"OTHER_NAME={at}" in (refused.value.hint or "")
        done = await kb.migrate_keys([f"y24={at}"])  # split at the first '=' only
        assert done.renamed == {f"file:{at}/a.md": "file:y24/a.md"}
        store = await kb._open(for_write=False)
        assert not await store.holds_legacy_keys()


@pytest.mark.parametrize("name", [" ", "a=b", "x\ny", "tab\t", ".hidden", "a/b", ""])
def test_a_root_name_is_one_printable_word(name: str) -> None:
    with pytest.raises(InputError, match="cannot name a root"):
        check_root_name(name)
