"""An ingest into a server gives extraction its worker early, and so does one into the embedded file
with no embedding model; with a model beside the engine's writes, small batches stay in threads.
Real stores, a recording extractor."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.conftest import FalkorServer
from tests.tools.conftest import HashEmbedder

from evigraph import KnowledgeBase
from evigraph.ingest.extraction import offload
from evigraph.ingest.extraction.rules import RuleBasedExtraction
from evigraph.models import GraphData, Ontology, TextChunk
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
