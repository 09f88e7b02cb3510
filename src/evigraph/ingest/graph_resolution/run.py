"""Resolution at finalize, start to end: block, judge, cluster, merge in batches, report.

Runs over the whole graph through the store contract only: entity records and name vectors in,
merges out, one store transaction per batch of merges. A batch is all or nothing, so a crash
leaves the graph before or after each batch, and the next finalize finds what is left to merge.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from evigraph.ingest.candidates import Blocks
from evigraph.ingest.graph_resolution.base import (
    GraphResolver,
    MergedEntity,
    ResolutionReport,
    labels_compatible,
    plan_merges,
)
from evigraph.ingest.graph_resolution.passages import StorePassages
from evigraph.store.base import GraphStore

MERGE_BATCH = 200
"""Merges per store transaction: large enough that a finalize of thousands of merges is a few
transactions, small enough that one transaction's reads and rewrites stay a few thousand rows."""

REPORTED_MERGES = 100
_VECTOR_SLICE = 2000


async def resolve_graph(store: GraphStore, resolver: GraphResolver) -> ResolutionReport:
    """Merge the entities `resolver` judges one, across the whole graph; what it found and did.

    A merged-away entity's declared properties the survivor lacks move to it with who set them,
    in the merge itself (`GraphStore.merge_entities`), so a merge loses nothing an agent recorded."""
    report = ResolutionReport(resolver=resolver.name)
    if not resolver.blocks:
        return report
    records = await store.entity_records()
    entities = {r.id: r for r in records}
    report.entities = len(records)
    blocks = Blocks(records)
    found = blocks.pairs(await name_vectors(store, blocks.linked_ids()))
    report.compared, report.candidates = found.compared, len(found.pairs)
    pairs = [p for p in found.pairs if labels_compatible(entities[p.a].label, entities[p.b].label)]
    report.incompatible = len(found.pairs) - len(pairs)
    judgement = await resolver.judge(pairs, entities, StorePassages(store, entities))
    report.judged = len(pairs) - judgement.unjudged
    report.confirmed, report.rejected, report.unjudged = (
        len(judgement.same),
        len(judgement.different),
        judgement.unjudged,
    )
    report.llm, report.errors = judgement.llm, judgement.failures
    merges = plan_merges(resolver.clusters(judgement, entities), entities)
    skipped: set[str] = set()
    for start in range(0, len(merges), MERGE_BATCH):
        batch = merges[start : start + MERGE_BATCH]
        outcome = await store.merge_entities(batch)
        report.merged += outcome.merged
        report.mentions_moved += outcome.mentions_moved
        report.relations_moved += outcome.relations_moved
        report.relations_folded += outcome.relations_folded
        skipped.update(outcome.skipped)
    report.merges = [
        MergedEntity(
            survivor=m.survivor,
            name=entities[m.survivor].name,
            merged=list(m.merged),
            names=[entities[i].name for i in m.merged],
        )
        for m in merges
        if m.survivor not in skipped
    ][:REPORTED_MERGES]
    return report


async def name_vectors(store: GraphStore, ids: Sequence[str]) -> dict[str, array[float]]:
    """The stored name vectors of `ids` (graph ranking's), as compact float arrays: tens of
    thousands of 384-wide vectors as Python floats would take gigabytes."""
    out: dict[str, array[float]] = {}
    for start in range(0, len(ids), _VECTOR_SLICE):
        for v in await store.entity_vectors(ids[start : start + _VECTOR_SLICE]):
            out[v.id] = array("f", v.vector)
    return out
