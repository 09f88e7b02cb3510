"""An ingest or a retrieve raises the young-generation collection threshold while it runs, gives
back the process's own setting when the last one ends, and never lowers a host's choice."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from evigraph.ingest import gc_threshold
from evigraph.ingest.extraction import offload
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.ingest.extraction.offload import MIN_OFFLOAD_CHUNKS, run_offloaded
from evigraph.ingest.extraction.rules import RuleBasedExtraction
from evigraph.ingest.gc_threshold import YOUNG_THRESHOLD, fewer_collections
from evigraph.ingest.text_documents import text_document
from evigraph.kb import KnowledgeBase
from evigraph.models import GraphData, LoadedDocument, Ontology, TextChunk
from evigraph.providers.embedders.base import Embedder

HOST = (700, 10, 10)


@pytest.fixture(autouse=True)
def host_thresholds() -> Iterator[None]:
    """Each test starts from CPython's default, and leaves the process as it found it."""
    before = gc.get_threshold()
    gc.set_threshold(*HOST)
    yield
    assert gc_threshold._holders == 0  # every ingest of the test gave its hold back
    gc.set_threshold(*before)


class Watching(ExtractionStrategy):
    """The rules extractor, noting the threshold each batch ran under; the first batch waits for
    a signal, so a test can overlap two ingests."""

    name = "watching"

    def __init__(self, hold: asyncio.Event | None = None) -> None:
        self.seen: list[tuple[int, int, int]] = []
        self.hold = hold

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        return (await self.extract_many([chunks], ontology))[0]

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        self.seen.append(gc.get_threshold())
        if self.hold is not None:
            await self.hold.wait()
        return await RuleBasedExtraction().extract_many(documents, ontology)


def _docs(prefix: str, n: int = 3) -> list[LoadedDocument]:
    text = "Ada Lovelace met Charles Babbage in London, note {}."
    return [text_document(text.format(i), key=f"{prefix}-{i}") for i in range(n)]


async def test_an_ingest_runs_under_the_raised_threshold_and_gives_it_back(tmp_path: Path) -> None:
    extractor = Watching()
    async with KnowledgeBase(tmp_path / "kb.db", extractor=extractor, embedder="none", batch_documents=1) as kb:
        report = await kb.ingest_documents(_docs("a"))
        assert report.ok
        assert extractor.seen == [(YOUNG_THRESHOLD, 10, 10)] * 3
        assert gc.get_threshold() == HOST  # back once the ingest ended


async def test_the_threshold_comes_back_when_an_ingest_fails(tmp_path: Path) -> None:
    class Broken(ExtractionStrategy):
        name = "broken"

        async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
            raise NotImplementedError

        async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
            from evigraph.errors import ConfigurationError

            raise ConfigurationError("the model is misconfigured", hint="fix it")

    async with KnowledgeBase(tmp_path / "kb.db", extractor=Broken(), embedder="none") as kb:
        with pytest.raises(Exception, match="misconfigured"):
            await kb.ingest_documents(_docs("a"))
    assert gc.get_threshold() == HOST


async def test_overlapping_ingests_keep_it_raised_until_the_last_one_ends(tmp_path: Path) -> None:
    release = asyncio.Event()
    slow = Watching(hold=release)
    async with (
        KnowledgeBase(tmp_path / "one.db", extractor=slow, embedder="none") as one,
        KnowledgeBase(tmp_path / "two.db", extractor=Watching(), embedder="none") as two,
    ):
        first = asyncio.create_task(one.ingest_documents(_docs("a")))
        while not slow.seen:  # the first ingest is inside its extraction
            await asyncio.sleep(0.01)
        assert (await two.ingest_documents(_docs("b"))).ok
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)  # the first still runs
        release.set()
        assert (await first).ok
    assert gc.get_threshold() == HOST


async def test_a_host_threshold_is_never_lowered_nor_overwritten(tmp_path: Path) -> None:
    extractor = Watching()
    gc.set_threshold(250_000, 20, 20)  # a host that chose its own, higher
    async with KnowledgeBase(tmp_path / "kb.db", extractor=extractor, embedder="none") as kb:
        assert (await kb.ingest_documents(_docs("a"))).ok
    assert extractor.seen == [(250_000, 20, 20)]
    assert gc.get_threshold() == (250_000, 20, 20)

    with fewer_collections():  # a host that changes it while an ingest runs keeps its change
        assert gc.get_threshold() == (250_000, 20, 20)
        gc.set_threshold(*HOST)
        with fewer_collections():
            assert gc.get_threshold() == HOST  # raised only by the first holder
        gc.set_threshold(5_000, 10, 10)
    assert gc.get_threshold() == (5_000, 10, 10)


def _threshold(_: int) -> tuple[int, int, int]:
    return gc.get_threshold()


async def test_the_extraction_worker_collects_rarely_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offload, "_worker", None)
    monkeypatch.setattr(offload, "_extracted", 0)
    monkeypatch.setattr(offload, "_lost", False)
    try:
        assert await run_offloaded(_threshold, 0, chunks=MIN_OFFLOAD_CHUNKS) == (YOUNG_THRESHOLD, 10, 10)
        assert offload._worker is not None  # it ran in the worker, not in a thread of this process
    finally:
        if offload._worker is not None:
            offload._worker.close()
    assert gc.get_threshold() == HOST  # this process's own is untouched


class WatchingEmbedder(Embedder):
    """A one-hot embedder of the first letter, noting the threshold each question is embedded under."""

    name = "test-first-letter"
    dimension = 26

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0 if i == (ord(t[:1].lower() or "a") - 97) % 26 else 0.0 for i in range(26)] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(gc.get_threshold())
        return super().embed_query(text)


async def test_a_retrieve_runs_under_the_raised_threshold_and_gives_it_back(tmp_path: Path) -> None:
    """The first retrieve of a process loads models and builds indexes that all live on."""
    embedder = WatchingEmbedder()
    async with KnowledgeBase(tmp_path / "kb.db", extractor=RuleBasedExtraction(), embedder=embedder) as kb:
        assert (await kb.ingest_documents(_docs("a"))).ok
        assert gc.get_threshold() == HOST
        result = await kb.retrieve("Where did Ada Lovelace meet Charles Babbage?", top_k=2)
        assert result.passages
        assert embedder.seen and set(embedder.seen) == {(YOUNG_THRESHOLD, 10, 10)}
        assert gc.get_threshold() == HOST
