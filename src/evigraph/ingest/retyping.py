"""Typing again at finalize: every document's names typed from the cues of the whole knowledge base.

Ingest types a batch's names from that batch's cues (`entity_types`), so the same files ingested
in other batches, or one by one as an agent adds them, typed differently: a name's label, and
whether it was junk at all, depended on the order the documents came in. Finalize makes the
graph a function of the documents held: it reads back what extraction found in each passage
before typing (`found_hits`), types all of it together, builds each document's graph the way
ingest does (`consensus.graphs_for_batch`, then `document_graph.settled_graph` with the exact
resolver), and hands the store the graphs, which rewrites only those that changed.

Typing runs again only when what it reads changed since the last time: the mark
(`RETYPED_SETTING`) is a fingerprint of every typed document's key and version and of the
ontology. (Not the store's write generation: an agent's edit or a merge moves it without changing
what typing reads, and writing the mark moves it too.) Where something changed, the store
rewrites only the graphs that differ.

All passages' texts are held at once (typing reads cues across all of them): about 1 KB a
passage, so 100 MB at 100,000 passages, for the length of the step.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence

from evigraph.ingest.bridges import bridge_sentences
from evigraph.ingest.document_graph import settled_graph
from evigraph.ingest.extraction.consensus import graphs_for_batch
from evigraph.ingest.extraction.found_hits import decode_hits
from evigraph.ingest.resolution import ExactMatchResolution
from evigraph.models import GraphData, Ontology, TextChunk
from evigraph.store.base import GraphStore
from evigraph.store.graph_rewrite import DocumentGraph, FoundDocument

log = logging.getLogger(__name__)

RETYPED_SETTING = "retyped_at"
"""Where finalize marks what it last typed (`_fingerprint`)."""

PAGE = 500
"""Documents read, and graphs written, at a time."""


async def retype(store: GraphStore, ontology: Ontology) -> int:
    """Type every document's found names again, together; returns how many documents' graphs changed."""
    docs = await _found(store)
    mark = _fingerprint(docs, ontology)
    if await store.get_setting(RETYPED_SETTING) == mark:
        return 0
    changed = 0
    if docs:
        graphs = await asyncio.to_thread(_graphs, docs, ontology)
        resolver = ExactMatchResolution()
        for start in range(0, len(docs), PAGE):
            part: list[DocumentGraph] = []
            for doc, (chunks, graph) in zip(docs[start : start + PAGE], graphs[start : start + PAGE], strict=True):
                settled, _ = await settled_graph(resolver, ontology, doc, chunks, graph)
                indexes = tuple(c.index for c in chunks)
                part.append(DocumentGraph(doc.key, doc.version, settled, indexes, bridge_sentences(chunks, settled)))
            changed += len(await store.replace_graphs(part))
    log.info("typed %d documents again: %d graphs changed", len(docs), changed)
    await store.set_setting(RETYPED_SETTING, mark)
    return changed


async def _found(store: GraphStore) -> list[FoundDocument]:
    docs: list[FoundDocument] = []
    after: str | None = None
    while True:
        page = await store.found_documents(after, PAGE)
        docs += page.documents
        if page.next is None:
            return docs
        after = page.next


def _graphs(docs: Sequence[FoundDocument], ontology: Ontology) -> list[tuple[list[TextChunk], GraphData]]:
    """Each document's passages and its graph, typed together as one batch."""
    documents = [
        [TextChunk(index=p.index, text=p.text, start=0, end=len(p.text)) for p in doc.passages] for doc in docs
    ]
    found = [decode_hits(p.text, p.found) for doc in docs for p in doc.passages]
    graphs = graphs_for_batch(documents, found, ontology, keep_found=False)
    return list(zip(documents, graphs, strict=True))


def _fingerprint(docs: Sequence[FoundDocument], ontology: Ontology) -> str:
    """What typing read: each document's key and version (a version's passages and found names
    never change), and the ontology."""
    digest = hashlib.sha1(ontology.model_dump_json().encode())
    for doc in docs:
        digest.update(f"\x1f{doc.key}\x1e{doc.version}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
