"""An ingest tells its progress within a batch and each batch's outcomes once written, and stops on request."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from pathlib import Path

from evigraph.ingest.cancel import Cancellation
from evigraph.ingest.progress import IngestProgress
from evigraph.ingest.text_documents import text_document
from evigraph.kb import KnowledgeBase
from evigraph.models import DocumentOutcome, IngestStatus, LoadedDocument
from evigraph.providers.embedders import Embedder

BATCH = 4


def _documents(n: int) -> list[LoadedDocument]:
    return [
        text_document(
            f"Harbor Lab {i} in Lisbon works with the Portuguese Sea Agency on buoy {i}.", key=f"note-{i:02d}"
        )
        for i in range(n)
    ]


class Recording(IngestProgress):
    """Every event in order, shared with the embedder so the two can be placed on one timeline."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.done = 0.0
        self._lock = threading.Lock()

    def start(self, total: int) -> None:
        self.events.append(("start", total))

    def advance(self, documents: float) -> None:
        with self._lock:
            self.done += documents
            self.events.append(("advance", documents))

    def finished(self, outcomes: Sequence[DocumentOutcome]) -> None:
        self.events.append(("finished", [o.key for o in outcomes]))


class Slices(Embedder):
    """Two passages a call; notes how far the bar was at each call, and stops the ingest when told to."""

    name, dimension, batch_size = "test-slices", 4, 2

    def __init__(self, progress: Recording, cancellation: Cancellation | None = None) -> None:
        self.progress = progress
        self.cancellation = cancellation
        self.calls = 0
        self.calls_at_stop: int | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_with_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[list[list[float]], list[list[list[float]]]]:
        self.calls += 1
        self.progress.events.append(("embed", self.progress.done))
        written = any(kind == "finished" for kind, _ in self.progress.events)
        if self.cancellation is not None and written and self.calls_at_stop is None:
            self.cancellation.cancel()  # as Ctrl-C would, once a batch is written
            self.calls_at_stop = self.calls
        return self.embed(texts), [self.embed(["."] * len(s)) for s in spans]


async def test_the_bar_moves_within_a_batch_and_outcomes_come_per_batch(tmp_path: Path) -> None:
    progress = Recording()
    docs = _documents(5 * BATCH)  # a batch is embedding while the one before it is extracted
    async with KnowledgeBase(
        tmp_path / "kb.db", extractor="rules", embedder=Slices(progress), batch_documents=BATCH
    ) as kb:
        report = await kb.ingest_documents(docs, progress=progress)
    assert report.ok and len(report.documents) == len(docs)
    assert progress.events[0] == ("start", len(docs))
    assert abs(progress.done - len(docs)) < 1e-6  # each document counted once in all

    # The bar moves between embedding slices of a batch, long before the batch is written.
    seen = [float(value) for kind, value in progress.events if kind == "embed"]  # type: ignore[arg-type]
    assert len(seen) >= 2 * 3
    assert all(a < b for a, b in itertools.pairwise(seen))

    # Each batch's lines come once it is written, while the next batches are still being embedded.
    told = [keys for kind, keys in progress.events if kind == "finished"]
    assert [key for keys in told for key in keys] == [d.key for d in docs]
    assert len(told) >= 3 and all(len(keys) % BATCH == 0 for keys in told)  # whole batches, as written
    first_told = next(i for i, (kind, _) in enumerate(progress.events) if kind == "finished")
    last_embed = max(i for i, (kind, _) in enumerate(progress.events) if kind == "embed")
    assert first_told < last_embed


async def test_a_stop_keeps_written_batches_and_drops_the_one_in_progress(tmp_path: Path) -> None:
    progress = Recording()
    cancellation = Cancellation()
    docs = _documents(5 * BATCH)
    embedder = Slices(progress, cancellation)
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=embedder, batch_documents=BATCH) as kb:
        report = await kb.ingest_documents(docs, progress=progress, cancellation=cancellation)
        assert cancellation.cancelled and embedder.calls == embedder.calls_at_stop  # no slice after the stop
        kept = [d.key for d in report.documents]
        assert all(d.status == IngestStatus.created for d in report.documents)
        # Whole batches, the first ones, in order: the one being embedded when asked was dropped.
        assert kept and len(kept) % BATCH == 0 and kept == [d.key for d in docs[: len(kept)]]
        assert len(kept) < len(docs)
        assert (await kb.status()).documents == len(kept)
        assert (await kb.check()).ok
        dropped = await kb.source_status(docs[len(kept)].key)
        assert dropped.state == "unknown"  # not left `pending`: its keys were released
        again = await kb.ingest_documents(docs, progress=False)  # the same ingest again finishes the job
    counts = again.counts()
    assert counts["unchanged"] == len(kept) and counts["created"] == len(docs) - len(kept)
