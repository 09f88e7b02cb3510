"""Entity names embedded during the ingest: every entity stored with its name's vector, no name
embedded twice, and a failed embedding of names left for the step after the write."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.tools.conftest import HashEmbedder

from evigraph.ingest.cancel import Cancellation
from evigraph.ingest.progress import IngestProgress
from evigraph.kb import KnowledgeBase
from evigraph.models import DocumentOutcome


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, keeping every text it was given; with `fail_on` it fails its first
    call that has that text (a name: passages and their sentences are longer)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.texts: list[str] = []
        self.fail_on = fail_on
        self.failed = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fail_on in texts and not self.failed:
            self.failed = True
            raise RuntimeError("the model ran out of memory")
        self.texts += texts
        return super().embed(texts)


FIRST = "Ada Lovelace worked with Charles Babbage in London. Charles Babbage designed the Analytical Engine."
SECOND = "Grace Hopper read about Ada Lovelace in Philadelphia."


async def test_every_entity_is_stored_with_its_names_vector_embedded_once(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=embedder) as kb:
        await kb.ingest(text=FIRST, key="first")
        first = {v.id: v.name for v in await kb.store.entity_vectors()}
        assert "Ada Lovelace" in first.values() and "Charles Babbage" in first.values()
        left = await kb.store.pending_ranking_texts(limit=100)
        assert left and {t.kind for t in left} == {"fact"}  # nothing else left: facts wait for a recipe or finalize
        await kb.ingest(text=SECOND, key="second")
        stored = {v.id: v.name for v in await kb.store.entity_vectors()}
    assert "Grace Hopper" in stored.values() and set(first) < set(stored)
    names = Counter(t for t in embedder.texts if t in set(stored.values()))
    assert names["Ada Lovelace"] == 1  # the second ingest found it stored with its vector
    assert all(n == 1 for n in names.values()), names


async def test_names_whose_embedding_failed_are_embedded_after_the_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = RecordingEmbedder(fail_on="Ada Lovelace")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=embedder) as kb:
        report = await kb.ingest(text=FIRST, key="first")
        assert report.ok and embedder.failed
        assert "embedding entity names failed (the model ran out of memory)" in caplog.text
        stored = {v.name for v in await kb.store.entity_vectors()}
        assert {"Ada Lovelace", "Charles Babbage"} <= stored
        assert await kb.store.pending_ranking_texts(limit=100, facts=False) == []


class StopAfterTheWrite(IngestProgress):
    """Asks the ingest to stop once every document is written: a stopped ingest skips the step
    that embeds what was left without a vector, so only the pipeline's own names remain."""

    def __init__(self, cancellation: Cancellation) -> None:
        self.cancellation = cancellation

    def finished(self, outcomes: Sequence[DocumentOutcome]) -> None:
        self.cancellation.cancel()


async def test_the_names_vectors_are_written_by_the_documents_write(tmp_path: Path) -> None:
    cancellation = Cancellation()
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=RecordingEmbedder()) as kb:
        report = await kb.ingest(
            text=FIRST, key="first", progress=StopAfterTheWrite(cancellation), cancellation=cancellation
        )
        assert report.ok and cancellation.cancelled
        stored = {v.name for v in await kb.store.entity_vectors()}
        assert {"Ada Lovelace", "Charles Babbage"} <= stored
        assert [t for t in await kb.store.pending_ranking_texts(limit=100) if t.kind == "entity"] == []
