"""Write groups: doubling with the knowledge base up to the store's cap, and, once every document is
read, written while the work left is still running, so the last write is small."""

from __future__ import annotations

from evigraph.ingest.writing import WriteGroup
from evigraph.models import DocumentVersion, GraphData, TextChunk


def version(passages: int) -> tuple[None, DocumentVersion]:
    chunks = tuple(TextChunk(index=i, text="x", start=i, end=i + 1) for i in range(passages))
    doc = DocumentVersion(
        key=f"k{passages}", title="t", path=None, content_hash="h", loader="text", chunks=chunks, graph=GraphData()
    )
    return None, doc


def sizes(batches: list[int], most: int, stored: int, read_all_after: int) -> list[int]:
    """The passages of each write when batches of `batches` passages arrive and the stream is
    known to have ended once `read_all_after` batches have been read."""
    group: WriteGroup[None] = WriteGroup(stored=stored)
    written = []
    for n, size in enumerate(batches):
        group.add([version(size)])
        to_come = sum(batches[n + 1 :]) if n + 1 >= read_all_after else None
        if group.full(most, to_come):
            written.append(group.take()[0])
    if group.batches:
        written.append(group.take()[0])
    return [sum(len(v.chunks) for _, v in w) for w in written]


def test_groups_double_and_the_last_shrink_once_everything_is_read() -> None:
    batches = [64] * 20
    assert sizes(batches, most=4096, stored=0, read_all_after=99) == [64, 64, 128, 256, 512, 256]
    # read to the end after the 8th batch: the last group no longer waits for everything
    assert sizes(batches, most=4096, stored=0, read_all_after=8) == [64, 64, 128, 256, 256, 192, 128, 64, 64, 64]


def test_a_knowledge_base_past_the_cap_keeps_whole_groups() -> None:
    batches = [64] * 20
    assert sizes(batches, most=512, stored=10_000, read_all_after=8) == [512, 512, 256]
