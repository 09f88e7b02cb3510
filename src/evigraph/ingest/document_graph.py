"""A document's graph from what its extractor found: resolved, pruned to the ontology, its title's
subject added. One home for these steps, as ingest runs them on each document and finalize runs
them again on every document whose names it typed again (`ingest/retyping.py`): the two must
give one graph for one set of names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from evigraph.ingest.pruning import prune
from evigraph.ingest.resolution import ExactMatchResolution, ResolutionStrategy
from evigraph.ingest.subjects import with_subject
from evigraph.models import GraphData, Ontology, PruneReport, TextChunk


class Titled(Protocol):
    """A document as its graph needs it: a key, and a title naming its subject."""

    @property
    def key(self) -> str: ...

    @property
    def title(self) -> str: ...


async def settled_graph(
    resolver: ResolutionStrategy, ontology: Ontology, doc: Titled, chunks: Sequence[TextChunk], graph: GraphData
) -> tuple[GraphData, PruneReport]:
    """`graph` as document `doc` stores it, and what pruning dropped; `resolver` may raise.

    The graph keeps the extractor's untyped names (`GraphData.found`) only where the exact
    resolver made it, which finalize repeats; a resolver that read the graph or asked a model
    (`llm_verified`) chose ids finalize could not choose again, so those documents keep the
    graph they were written with.
    """
    resolved = await resolver.resolve_document(doc.key, graph, chunks)
    resolved, pruned = prune(resolved, ontology)
    resolved = with_subject(resolved, doc.title, [c.index for c in chunks], ontology)
    found = graph.found if isinstance(resolver, ExactMatchResolution) else ()
    return resolved.model_copy(update={"found": found}), pruned
