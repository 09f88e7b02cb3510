"""The graph index read from the embedded engine: every relation, then every mention, a row at a time."""

from __future__ import annotations

from typing import TypeVar

from evigraph.store.core.graph_index import GraphIndex, GraphLists, GraphSink, Rel
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.packed import unpack_ids

S = TypeVar("S", bound=GraphSink)


def build_graph_index(tx: Tx) -> GraphIndex:
    return read_graph(tx, GraphLists()).done()


def read_graph(tx: Tx, into: S) -> S:
    """Every relation, then every mention, into `into`, a row at a time (the engine's cursor is
    read as it goes, so only `into` grows)."""
    result = tx.execute(
        """MATCH (a:Entity)-[r:RELATES]->(b:Entity)
           RETURN r.id, a.id, b.id, a.name, b.name, r.type, r.fact, r.confidence, r.source_chunks"""
    )
    try:
        while result.has_next():
            rid, a, b, a_name, b_name, rtype, fact, conf, chunks = result.get_next()
            into.relation(Rel(rid, a, b, a_name, b_name, rtype, fact, float(conf or 0.0), tuple(unpack_ids(chunks))))
    finally:
        result.close()
    result = tx.execute("MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) RETURN e.id, c.id")
    try:
        while result.has_next():
            into.mention(*result.get_next())
    finally:
        result.close()
    return into
