"""One bad file, file name or record must fail alone: the rest of the ingest goes on.

Covers a file name that is not UTF-8 (from a folder walk, a glob and through the toolkit), a
JSONL file with bad lines among good ones, and that records are streamed in batches rather than
loaded as one list.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from evigraph.errors import ConfigurationError, InputError, StoreError
from evigraph.ingest.batching import AHEAD_BATCHES
from evigraph.ingest.chunking import StructuralChunking
from evigraph.ingest.extraction import extractor_by_name
from evigraph.ingest.loaders import JsonlLoader, LoaderStrategy
from evigraph.ingest.loaders.base import RejectedRecord
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.ingest.pipeline import IngestRun, Strategies
from evigraph.ingest.resolution import ExactMatchResolution
from evigraph.ingest.sources import file_key
from evigraph.kb import KnowledgeBase
from evigraph.models import DocumentVersion, IngestStatus, LoadedDocument, SourceState, StoredDocument
from evigraph.store.opening import connect
from evigraph.tools.toolkit import Toolkit
from evigraph.tools.write_tools import IngestResult, PreviewResult

GOOD = "Acme Robotics Corp is a company in Oslo. Dr. Ingrid Halvorsen founded it.\n"


def bad_name_folder(folder: Path) -> Path:
    """good.txt plus a file whose name holds byte 0xff, which is not UTF-8."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.txt").write_text(GOOD, encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"bad\xff.txt"), "wb") as fh:
        fh.write(b"Globex Company is based in Bergen.\n")
    return folder


@pytest.fixture
def bad_names(tmp_path: Path) -> Path:
    try:
        return bad_name_folder(tmp_path / "docs")
    except OSError as exc:  # a filesystem that insists on UTF-8 names (some macOS volumes)
        pytest.skip(f"this filesystem refuses non-UTF-8 names: {exc}")


@pytest.mark.parametrize("source", ["folder", "glob"])
async def test_a_non_utf8_file_name_fails_alone_with_its_bytes_escaped(
    tmp_path: Path, bad_names: Path, source: str
) -> None:
    given = str(bad_names) if source == "folder" else str(bad_names / "*.txt")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([given], progress=False)
        by_status = {d.status: d for d in report.documents}
        assert sorted(d.status for d in report.documents) == [IngestStatus.created, IngestStatus.failed]
        assert by_status[IngestStatus.created].key.endswith("/good.txt")
        failed = by_status[IngestStatus.failed]
        assert failed.key == f"file:{bad_names.name}/bad\\xff.txt"
        assert failed.error is not None and "bad\\xff.txt" in failed.error
        assert "not valid UTF-8" in failed.error and "rename" in failed.error
        report.model_dump_json()  # the report can be printed and sent as JSON
        logged = await kb.source_status(failed.key)
        assert logged.state == SourceState.failed
        assert (await kb.status()).documents == 1


async def test_the_toolkit_reports_a_non_utf8_file_name_as_failed(tmp_path: Path, bad_names: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb, files_root=bad_names)
        result = await tk.call("ingest", {"files": ["*.txt"], "plan": [{"match": "*", "extractor": "rules"}]})
        assert isinstance(result, IngestResult)
        statuses = {d.document_key: d.status for d in result.documents}
        bad = f"file:{bad_names.name}/bad\\xff.txt"
        assert statuses == {bad: "failed", f"file:{bad_names.name}/good.txt": "ingested"}
        assert "bad\\xff.txt" in result.to_llm_text()
        result.model_dump_json()
        preview = await tk.call("preview_files", {})
        assert isinstance(preview, PreviewResult)
        named = {f.path: f for f in preview.files}
        assert named["bad\\xff.txt"].error is not None and "not valid UTF-8" in named["bad\\xff.txt"].error
        preview.model_dump_json()


def write_jsonl(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"\n".join(x if isinstance(x, bytes) else x.encode() for x in lines) + b"\n")
    return path


MIXED: list[str | bytes] = [
    json.dumps({"id": "r1", "text": "Acme Robotics Corp is in Oslo."}),
    "{not json",
    json.dumps({"id": "r3", "text": "Globex Company is in Bergen."}),
    '{"id": "r4", "text": "a lone \\ud800 surrogate"}',
    json.dumps({"id": "r1", "text": "a second r1"}),
    b'{"id": "r6", "text": "Latin-1 \xe9"}',
    json.dumps({"id": "r7", "title": "no text"}),
    json.dumps({"id": "r8", "text": "Polar Labs Corp is in Troms\u00f8."}),
]
BAD_LINES = {  # line -> (reported key, reason)
    2: ("#2", "invalid JSON"),
    4: ("r4", "lone surrogate"),
    5: ("#5", "duplicate id 'r1'"),
    6: ("#6", "not valid UTF-8"),
    7: ("r7", "has no text"),
}


async def test_bad_jsonl_lines_are_reported_and_the_good_records_ingested(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", MIXED)
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([path], progress=False)
        created = sorted(d.key for d in report.documents if d.status == IngestStatus.created)
        assert created == ["r1", "r3", "r8"]
        failed = {d.line or 0: d for d in report.failed}
        assert sorted(failed) == sorted(BAD_LINES)
        for line, (key, reason) in BAD_LINES.items():
            outcome = failed[line]
            assert outcome.key.endswith(key) and outcome.path == str(path)
            assert outcome.error is not None and f"line {line}: " in outcome.error and reason in outcome.error
        assert (await kb.source_status("r7")).state == SourceState.failed  # an id read from a bad record
        again = await kb.ingest([path], progress=False)
        assert again.counts()["unchanged"] == 3 and len(again.failed) == len(BAD_LINES)


async def test_the_toolkit_ingests_the_good_records_of_a_jsonl_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    write_jsonl(root / "mixed.jsonl", MIXED)
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb, files_root=root)
        result = await tk.call("ingest", {"files": ["mixed.jsonl"], "plan": [{"match": "*", "extractor": "rules"}]})
        assert isinstance(result, IngestResult)
        statuses = {d.document_key: d.status for d in result.documents}
        assert [k for k, s in statuses.items() if s == "ingested"] == ["r1", "r3", "r8"]
        errors = [d.error or "" for d in result.documents if d.status == "failed"]
        assert len(errors) == len(BAD_LINES)
        assert all(any(f"line {line}: " in e for e in errors) for line in BAD_LINES)


def test_load_keeps_its_all_or_nothing_contract(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", MIXED)
    with pytest.raises(InputError, match="line 2: invalid JSON"):
        JsonlLoader().load(path, "k")
    items = list(JsonlLoader().stream(path, "k"))
    assert [i.line for i in items if isinstance(i, RejectedRecord)] == sorted(BAD_LINES)


def test_an_empty_or_binary_jsonl_still_fails_as_a_whole(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty file"):
        list(JsonlLoader().stream(write_jsonl(tmp_path / "blank.jsonl", ["", "  "]), "k"))
    with pytest.raises(InputError, match="binary"):
        list(JsonlLoader().stream(write_jsonl(tmp_path / "bin.jsonl", [b"\x00\x01{}"]), "k"))
    with pytest.raises(InputError, match="limit"):
        list(JsonlLoader(max_bytes=10).stream(write_jsonl(tmp_path / "big.jsonl", MIXED), "k"))


class CountingLoader(LoaderStrategy):
    """Yields `total` records and notes, at each, how many outcomes the ingest had reported."""

    name = "counting"
    extensions = (".rec",)

    def __init__(self, total: int) -> None:
        self.total = total
        self.run: IngestRun | None = None
        self.reported_at: list[int] = []

    def load(self, path: Path, key: str) -> list[LoadedDocument]:
        return list(self._documents(key))

    def stream(self, path: Path, key: str) -> Iterator[LoadedDocument]:
        for doc in self._documents(key):
            assert self.run is not None
            self.reported_at.append(len(self.run.report.documents))
            yield doc

    def _documents(self, key: str) -> Iterator[LoadedDocument]:
        for i in range(self.total):
            text = f"Record {i}: Dr. Ada Num{i} founded Acme{i} Corp in Oslo."
            yield LoadedDocument(key=f"{key}#{i}", title=f"r{i}", path=None, text=text, loader=self.name)


def counting_records(tmp_path: Path, total: int) -> tuple[Path, CountingLoader, Strategies]:
    """A source of `total` generated one-passage records, and the strategies that ingest it."""
    source = tmp_path / "many.rec"
    source.write_text("records are made by the loader\n", encoding="utf-8")
    loader = CountingLoader(total)
    strategies = Strategies(
        chunker=StructuralChunking(),
        extractor=extractor_by_name("rules"),
        resolver=ExactMatchResolution(),
        ontology=DEFAULT_ONTOLOGY,
        loader_for=lambda src: loader,
        extensions=[".rec"],
    )
    return source, loader, strategies


async def test_records_are_streamed_in_batches_not_loaded_as_one_list(tmp_path: Path) -> None:
    source, loader, strategies = counting_records(tmp_path, 600)
    written: list[int] = []
    async with connect(tmp_path / "kb.db") as store:
        store.write_group_passages = 40
        write_versions = store.write_versions

        async def recording(versions: Sequence[DocumentVersion]) -> list[StoredDocument]:
            written.append(len(versions))
            return await write_versions(versions)

        store.write_versions = recording  # type: ignore[method-assign]
        run = IngestRun(store, strategies, batch_documents=10)
        loader.run = run
        report = await run.run([str(source)])
    assert report.counts()["created"] == 600
    # Write groups grow with what the knowledge base holds (none at first), up to the store's cap.
    assert written == [10, 10, 20] + [40] * 14
    # Written while later records were still unread: at most the group being written, the one
    # being gathered, the batch being processed and the batches read ahead are held back.
    held = 2 * 40 + (1 + AHEAD_BATCHES) * 10
    assert loader.reported_at[-1] >= 600 - held
    assert max(i - seen for i, seen in enumerate(loader.reported_at)) <= held


async def test_a_document_the_store_refuses_fails_alone_in_a_large_write_group(tmp_path: Path) -> None:
    """The store's refusal of one document in a group of 40 costs a few halved retries, not 40 writes."""
    source, loader, strategies = counting_records(tmp_path, 300)
    poisoned = f"{file_key(source)}#150"
    calls: list[int] = []
    async with connect(tmp_path / "kb.db") as store:
        store.write_group_passages = 40
        write_versions = store.write_versions

        async def refusing(versions: Sequence[DocumentVersion]) -> list[StoredDocument]:
            calls.append(len(versions))
            if any(v.key == poisoned for v in versions):
                raise StoreError("the engine refused a row", hint="none")
            return await write_versions(versions)

        store.write_versions = refusing  # type: ignore[method-assign]
        run = IngestRun(store, strategies, batch_documents=10)
        loader.run = run
        report = await run.run([str(source)])
        assert (await store.counts()).documents == 299
    assert report.counts()["created"] == 299
    assert [d.key for d in report.failed] == [poisoned]
    assert "the engine refused a row" in (report.failed[0].error or "")
    # 10 groups, and the poisoned one of 40 halved down to one document: 2 writes per level,
    # against the 40 single writes of a retry document by document.
    assert 1 in calls[10:]
    assert len(calls) - 10 <= 2 * math.ceil(math.log2(40))


async def test_text_that_cannot_be_stored_fails_alone(tmp_path: Path) -> None:
    class Surrogates(LoaderStrategy):
        name = "surrogates"
        extensions = (".sur",)

        def load(self, path: Path, key: str) -> list[LoadedDocument]:
            return [
                LoadedDocument(key=key + "#ok", title="ok", path=str(path), text=GOOD, loader=self.name),
                LoadedDocument(key=key + "#bad", title="bad", path=str(path), text="x \ud800 y", loader=self.name),
                LoadedDocument(key=key + "\udcff", title="k", path=str(path), text=GOOD, loader=self.name),
            ]

    source = tmp_path / "a.sur"
    source.write_text("anything", encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", loaders=[Surrogates()]) as kb:
        report = await kb.ingest([source], progress=False)
        assert [d.key for d in report.documents if d.status == IngestStatus.created] == [
            f"file:{tmp_path.name}/a.sur#ok"
        ]
        bad = {d.key.rsplit("/", 1)[-1]: d.error or "" for d in report.failed}
        assert set(bad) == {"a.sur#bad", "a.sur\\xff"}
        assert all("lone surrogate" in e for e in bad.values())
        text = await kb.ingest(text="a \ud800 b", key="note", progress=False)
        assert text.failed and "text" in (text.failed[0].error or "")


async def test_stored_versions_are_asked_for_many_batches_at_once(tmp_path: Path) -> None:
    """An ingest into an empty knowledge base looks up nothing; a second ingest of the same
    records looks up the keys of the batches read ahead together, each once, and finds every one
    unchanged."""
    source, loader, strategies = counting_records(tmp_path, 600)
    asked: list[list[str]] = []
    async with connect(tmp_path / "kb.db") as store:
        get_documents = store.get_documents

        async def recording(keys: Sequence[str]) -> dict[str, StoredDocument]:
            asked.append(list(keys))
            return await get_documents(keys)

        store.get_documents = recording  # type: ignore[method-assign]
        runs = [IngestRun(store, strategies, batch_documents=10) for _ in range(2)]
        loader.run = runs[0]
        first = await runs[0].run([str(source)])
        calls = len(asked)
        loader.run = runs[1]
        again = await runs[1].run([str(source)])
    assert first.counts()["created"] == 600 and again.counts()["unchanged"] == 600
    assert calls == 0  # nothing is stored yet: nothing to look up
    keys = [k for call in asked for k in call]
    assert len(keys) == len(set(keys)) == 600  # each key once
    assert len(asked) <= -(-600 // (AHEAD_BATCHES * 10)) + 1  # not one call per batch of 10 (60)


async def test_a_batch_size_that_is_not_positive_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    """A zero batch would read nothing ahead and end the ingest at once, reporting nothing lost."""
    with pytest.raises(ConfigurationError, match="batch_documents must be positive"):
        KnowledgeBase(tmp_path / "kb.db", batch_documents=0)
    source, _, strategies = counting_records(tmp_path, 5)
    async with connect(tmp_path / "kb.db") as store:
        with pytest.raises(ValueError, match="positive bounds"):
            await IngestRun(store, strategies, batch_documents=0).run([str(source)])


async def test_writes_a_store_takes_at_once_overlap_and_each_releases_its_own_keys(tmp_path: Path) -> None:
    """With `writes_at_once = 2`, two groups are written at once, never three; a group that ends
    before an older one releases its own keys, and every key is free when the ingest ends."""
    source, loader, strategies = counting_records(tmp_path, 60)
    running, most, ended, held_meanwhile = 0, 0, [], []
    async with connect(tmp_path / "kb.db") as store:
        store.writes_at_once = 2
        write_versions = store.write_versions

        async def overlapping(versions: Sequence[DocumentVersion]) -> list[StoredDocument]:
            nonlocal running, most
            running += 1
            most = max(most, running)
            try:
                if versions[0].key.endswith("#0"):
                    await asyncio.sleep(0.5)  # the first group ends after the next one
                    held_meanwhile.append(all(v.key in run.in_flight for v in versions))
                return await write_versions(versions)
            finally:
                running -= 1
                ended.append(versions[0].key)

        store.write_versions = overlapping  # type: ignore[method-assign]
        run = IngestRun(store, strategies, batch_documents=10)
        loader.run = run
        report = await run.run([str(source)])
        assert report.counts()["created"] == 60
        assert most == 2
        assert ended[0] != f"{file_key(source)}#0"  # a later group ended first
        assert held_meanwhile == [True]  # and released its own keys, not the first group's
        assert not [d.key for d in report.documents if d.key in run.in_flight]  # every key released
        assert (await store.counts()).documents == 60


async def test_a_store_that_takes_no_write_at_once_is_refused_by_name(tmp_path: Path) -> None:
    _source, _loader, strategies = counting_records(tmp_path, 1)
    async with connect(tmp_path / "kb.db") as store:
        store.writes_at_once = 0
        with pytest.raises(ValueError, match=r"EmbeddedStore\.writes_at_once is 0.*set it to 1"):
            IngestRun(store, strategies)
