"""`source_status` says `pending` while a document is being ingested, on every surface.

The knowledge base tracks what is in flight, so a JSONL record, a text and a file read by the
CLI are all reported, not only what one toolkit session started.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from evigraph import KnowledgeBase, Toolkit
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.models import GraphData, Ontology, SourceState, TextChunk


class GatedExtraction(ExtractionStrategy):
    """Holds every extraction until the test opens the gate, so the ingest stays in flight."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        self.started.set()
        await self.gate.wait()
        return GraphData()


async def test_records_of_a_file_are_pending_until_written(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        "\n".join(json.dumps({"id": f"rec-{i}", "text": f"Record number {i} about Lisbon."}) for i in range(3)),
        encoding="utf-8",
    )
    extractor = GatedExtraction()
    async with KnowledgeBase(tmp_path / "kb.db", extractor=extractor) as kb:
        extractor.gate.set()
        await kb.ingest(text="An earlier note.", key="rec-0")  # stored before: pending keeps its version
        extractor.started.clear()
        extractor.gate.clear()
        running = asyncio.create_task(kb.ingest([records]))
        await asyncio.wait_for(extractor.started.wait(), 30)
        session = Toolkit(kb).new_session()
        during = [await kb.source_status(f"rec-{i}") for i in range(3)]
        assert [r.state for r in during] == [SourceState.pending] * 3
        assert during[0].version == 1 and during[1].version == 0
        via_tool = await session.call("source_status", {"document_key": "rec-2"})
        assert via_tool.state == SourceState.pending  # type: ignore[attr-defined]
        extractor.gate.set()
        report = await running
        assert report.ok
        after = [await kb.source_status(f"rec-{i}") for i in range(3)]
        assert [r.state for r in after] == [SourceState.current] * 3
        assert after[0].version == 2


async def test_a_failed_ingest_is_not_left_pending(tmp_path: Path) -> None:
    class Broken(ExtractionStrategy):
        async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
            raise RuntimeError("extractor crashed")

    async with KnowledgeBase(tmp_path / "kb.db", extractor=Broken()) as kb:
        report = await kb.ingest(text="Some text.", key="note")  # the failure is pinned to the document
        assert [d.key for d in report.failed] == ["note"]
        assert (await kb.source_status("note")).state == SourceState.failed
