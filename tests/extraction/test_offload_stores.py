"""An ingest into a server gives extraction its worker early, and so does one into the embedded file
with no embedding model; with a model beside the engine's writes, small batches stay in threads.
Real stores, a recording extractor."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.conftest import FalkorServer
from tests.tools.conftest import HashEmbedder

from evigraph import KnowledgeBase
from evigraph.ingest import pipeline
from evigraph.ingest.extraction import offload
from evigraph.ingest.extraction.rules import RuleBasedExtraction
from evigraph.models import GraphData, Ontology, StoreCounts, TextChunk
from evigraph.providers.embedders import Embedder


class _Recording(RuleBasedExtraction):
    def __init__(self) -> None:
        self.early: list[bool] = []

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        self.early.append(offload.early.get())
        return await super().extract_many(documents, ontology)


async def _early_during_ingest(db: str, embedder: Embedder | str = "none") -> list[bool]:
    extractor = _Recording()
    async with KnowledgeBase(db, extractor=extractor, embedder=embedder) as kb:
        report = await kb.ingest(text="Ada Lovelace met Charles Babbage in London.", key="ada")
    assert [o.key for o in report.documents] == ["ada"]
    assert offload.early.get() is False  # the ingest's setting does not outlive it
    return extractor.early


async def test_an_ingest_into_the_embedded_file_with_a_model_keeps_small_batches_in_threads(tmp_path: Path) -> None:
    assert await _early_during_ingest(str(tmp_path / "kb.db"), HashEmbedder()) == [False]


async def test_an_ingest_into_the_embedded_file_without_a_model_sends_batches_early(tmp_path: Path) -> None:
    assert await _early_during_ingest(str(tmp_path / "kb.db")) == [True]


async def test_an_ingest_into_a_server_sends_batches_to_the_worker_early(falkordb_server: FalkorServer) -> None:
    assert await _early_during_ingest(falkordb_server.url("early_offload")) == [True]


async def _trims(db: str, records: Path, monkeypatch: pytest.MonkeyPatch, worker: bool) -> tuple[int, int]:
    """(memory trims, batches the worker extracted) over one ingest of `records`."""
    trims: list[int] = []
    sent: list[int] = []
    real_call = offload._Worker.call
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "give_back_memory", lambda: trims.append(1))
        patch.setattr(offload._Worker, "call", lambda self, fn, args: sent.append(1) or real_call(self, fn, args))
        if not worker:
            patch.setattr(offload, "_ready_worker", lambda chunks: None)
        async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
            report = await kb.ingest([str(records)], progress=False)
    assert report.ok and len(report.documents) == 400
    return len(trims), len(sent)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the worker process is used on 2+ cores only")
async def test_a_batch_the_worker_extracted_leaves_no_memory_to_give_back_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trim after a batch's extraction (`give_back_memory`, 6% of a 100,000-passage ingest's
    time) runs only where the extraction ran in this process; the same ingest in threads trims
    once more for each batch the worker took, and the writes trim alike in both."""
    records = tmp_path / "records.jsonl"
    lines = [
        f'{{"id": "r{i}", "text": "Ada Lovelace met Charles Babbage in London in {1800 + i}."}}' for i in range(400)
    ]
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    in_threads, none_sent = await _trims(str(tmp_path / "threads.db"), records, monkeypatch, worker=False)
    in_worker, batches = await _trims(str(tmp_path / "worker.db"), records, monkeypatch, worker=True)
    assert none_sent == 0 and batches >= 1
    assert in_threads - in_worker == batches


class _Slow(RuleBasedExtraction):
    """Counts the batches it works on at once; each takes a while, as a large one would."""

    def __init__(self, queues: bool) -> None:
        self.queues_batches = queues
        self.now = 0
        self.most = 0

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.2)
            return await super().extract_many(documents, ontology)
        finally:
            self.now -= 1


async def _ingest_with(db: str, records: Path, extractor: _Slow, embedder: Embedder | str = "none") -> StoreCounts:
    async with KnowledgeBase(db, extractor=extractor, embedder=embedder) as kb:
        report = await kb.ingest([str(records)], progress=False)
        assert report.ok and len(report.documents) == 300
        return await kb.store.counts()  # type: ignore[union-attr]


async def test_an_extractor_that_queues_batches_gets_the_next_before_the_last_is_back(tmp_path: Path) -> None:
    """With no model on this machine's cores, the rules extractor is handed the next batch while it
    works on one (its worker takes them in turn from its pipe); an extractor that does not queue,
    or an ingest with a model beside it, gets one at a time. The graph is the same either way."""
    records = tmp_path / "records.jsonl"
    text = "Ada Lovelace met Charles Babbage in London in"
    lines = [f'{{"id": "r{i}", "text": "{text} {1700 + i}."}}' for i in range(300)]
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    queued, one_by_one, with_model = _Slow(queues=True), _Slow(queues=False), _Slow(queues=True)
    overlapped = await _ingest_with(str(tmp_path / "queued.db"), records, queued)
    in_turn = await _ingest_with(str(tmp_path / "in_turn.db"), records, one_by_one)
    await _ingest_with(str(tmp_path / "model.db"), records, with_model, HashEmbedder())
    assert (queued.most, one_by_one.most, with_model.most) == (2, 1, 1)
    assert overlapped == in_turn and overlapped.relations > 0
