"""The graph index written straight from rows to arrays answers exactly as the one built as dicts.

Saving used to build the dicts first and convert them; now the arrays are made from the rows
(`store/core/graph_arrays.py`), so this holds the two to each other on a real knowledge base: every
list in the same order, and every walk retrieval makes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.tools.conftest import write_corpus

from evigraph import KnowledgeBase
from evigraph.models import WalkBounds
from evigraph.store.core.graph_arrays import GraphArrays
from evigraph.store.core.graph_index import GraphIndex
from evigraph.store.embedded.graph_reads import build_graph_index, read_graph
from evigraph.store.embedded.store import EmbeddedStore
from evigraph.store.saved_indexes import GRAPH


def walks(index: GraphIndex) -> dict[str, Any]:
    entities = sorted(index.edges)
    chunks = sorted(index.mentioned)
    return {
        "edges": {k: [r.id for r in index.edges[k]] for k in entities},
        "stated": {k: [r.id for r in index.stated[k]] for k in sorted(index.stated)},
        "mentions": {k: list(index.mentions[k]) for k in sorted(index.mentions)},
        "mentioned": {k: list(index.mentioned[k]) for k in chunks},
        "neighbours": [n.model_dump() for n in index.neighbours(entities, 2, 500)],
        "passages_for_entities": index.passages_for_entities(entities, 5),
        "entities_for_passages": index.entities_for_passages(chunks),
        "relations_for_passages": [n.model_dump() for n in index.relations_for_passages(chunks, 500)],
        "explore": [index.explore(e, WalkBounds(depth=2)).model_dump() for e in entities[:5]],
        "weights": sorted(index.weighted_pairs().items()),
    }


async def _ingest(db: Path, corpus: Path) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        report = await kb.ingest([corpus])
        assert [d.error for d in report.failed] == []


def test_arrays_from_rows_answer_as_the_built_graph(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    asyncio.run(_ingest(db, write_corpus(tmp_path / "corpus")))
    store = EmbeddedStore(db, read_only=True)
    asyncio.run(store.open())
    try:
        built, arrays = store.executor.read_sync(
            lambda tx: (build_graph_index(tx), read_graph(tx, GraphArrays()).arrays())
        )
    finally:
        asyncio.run(store.close())
    expected = walks(built)
    assert expected["neighbours"] and expected["stated"] and expected["mentions"]
    assert walks(GRAPH.load(arrays, {})) == expected


def test_an_empty_graph_makes_empty_arrays() -> None:
    index = GRAPH.load(GraphArrays().arrays(), {})
    assert walks(index) == walks(GraphIndex())


def test_mentions_are_listed_by_id_whatever_order_the_rows_come_in() -> None:
    """The engine's row order is its storage order, which a compaction on LadybugDB changes: an
    index saved before one and an index built after it must list each mention alike."""
    import random

    from evigraph.store.core.graph_index import GraphLists

    rows = [(f"e{i % 7}", f"c{i % 11}:{i}") for i in range(60)]
    shuffled = rows[:]
    random.Random(4).shuffle(shuffled)
    built = []
    for order in (rows, shuffled):
        lists, arrays = GraphLists(), GraphArrays()
        for entity, chunk in order:
            lists.mention(entity, chunk)
            arrays.mention(entity, chunk)
        built += [lists.done(), GRAPH.load(arrays.arrays(), {})]
    views = [({k: list(v) for k, v in g.mentions.items()}, {k: list(v) for k, v in g.mentioned.items()}) for g in built]
    assert all(view == views[0] for view in views)
    mentions, mentioned = views[0]
    assert all(chunks == sorted(chunks) for chunks in mentions.values()) and len(mentions) == 7
    assert all(entities == sorted(entities) for entities in mentioned.values()) and len(mentioned) == 60
