"""Typing again at finalize on FalkorDB: documents' found names read back, and their graphs
replaced (`GraphRewriteStore`).

What changed is found by a read on the primary; only then is anything written, so a finalize
with nothing new does not move the generation (saved indexes stay current). The replacement of
a batch is one query, so readers see each document's old graph or its new one: it refuses
(`documents.REFUSED`, an error that undoes the query) when a document is no longer at the
version read, and the batch is then left for the next finalize, since the write that moved it
on brought a graph typed with its own batch. Orphans and full-text columns follow as in a
version write (`documents`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.property_types import holds_no_properties
from evigraph.store.core.graph_rows import (
    FOUND_PASSAGES,
    GraphRows,
    found_page,
    rewrite_plan,
)
from evigraph.store.core.schema_names import EXTRACTION_SOURCE
from evigraph.store.core.write_plan import utc_now
from evigraph.store.falkordb import documents
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.merging import primary_reader
from evigraph.store.graph_rewrite import DocumentGraph, FoundPage


def found_documents(conn: Connection, after: str | None, limit: int) -> FoundPage:
    """Read on the primary, as the graphs are then compared there (a replica may lag)."""
    read = primary_reader(conn)
    keys = [
        r["key"]
        for r in read(
            "MATCH (d:Document) WHERE d.key > $after RETURN d.key AS key ORDER BY key LIMIT $limit",
            {"after": after or "", "limit": limit},
        )
    ]
    if not keys:
        return FoundPage([], None)
    rows = read(
        f"""UNWIND $keys AS k MATCH (d:Document {{key: k}}) MATCH (c:Chunk {{document: k}})
            WHERE c.live AND c.version = d.version {FOUND_PASSAGES}""",
        {"keys": keys},
    )
    return found_page(keys, limit, rows)


def changes(conn: Connection, graphs: Sequence[DocumentGraph]) -> GraphRows:
    """What replacing `graphs` would change, read on the primary (`rewrite_plan`)."""
    return rewrite_plan(primary_reader(conn), graphs, lambda offsets: tuple(offsets or ()))


def replace_graphs(conn: Connection, changed: GraphRows) -> list[str]:
    """Write what `changes` found; returns the keys replaced ([] when a document moved on meanwhile)."""
    by_chunk: dict[str, list[dict[str, Any]]] = {}
    for m in changed.rows.mentions:
        by_chunk.setdefault(m["c"], []).append({"e": m["e"], "s": m["s"], "t": m["t"]})
    at = utc_now().isoformat()
    params = {
        "docs": [{"key": key, "version": version} for key, version in changed.versions.items()],
        "chunks": changed.chunks,
        "held": sorted(changed.held),
        "entities": documents.entity_rows(changed.rows.entities.values()),
        "mentions": [{"c": c, "m": ms} for c, ms in by_chunk.items()],
        "relations": list(changed.rows.relations.values()),
        "sentences": changed.sentences,
        "source": EXTRACTION_SOURCE,
        "at": at,
    }
    try:
        found = conn.write_sync(_REPLACE, params)
    except Exception as exc:
        if documents.REFUSED not in str(exc):
            raise
        return []
    documents.refresh_search_texts(conn, found[0]["grown"] if found else [])
    documents.delete_orphans(conn, changed.held)
    return list(changed.keys)


_REPLACE = f"""
UNWIND $docs AS r
OPTIONAL MATCH (d:Document {{key: r.key}})
WITH collect(coalesce(d.version, -1) = r.version) AS same
WITH 1 / CASE WHEN all(x IN same WHERE x) THEN 1 ELSE 0 END AS ready
CALL {{
  UNWIND $chunks AS cid MATCH (:Entity)-[m:MENTIONED_IN]->(:Chunk {{id: cid}}) DELETE m
  RETURN count(*) AS unmentioned
}}
CALL {{
  UNWIND $held AS eid MATCH (a:Entity {{id: eid}})-[x:RELATES]-(:Entity)
  WHERE coalesce(x._source, $source) = $source AND any(c IN x.source_chunks WHERE c IN $chunks)
  WITH DISTINCT x
  SET x.source_chunks = [c IN x.source_chunks WHERE NOT c IN $chunks]
  WITH collect(CASE WHEN size(x.source_chunks) = 0 AND {holds_no_properties("x")} THEN x END) AS empty
  FOREACH (x IN empty | DELETE x)
  RETURN count(*) AS pruned
}}
CALL {{ {documents.merge_entities_query("entities")} }}
CALL {{
  UNWIND $mentions AS r MATCH (c:Chunk {{id: r.c}})
  UNWIND r.m AS m MATCH (e:Entity {{id: m.e}})
  CREATE (e)-[:MENTIONED_IN {{span_starts: m.s, span_ends: m.t}}]->(c)
  RETURN count(*) AS mentioned
}}
CALL {{ {documents.merge_relations_query("relations")} RETURN count(*) AS related }}
CALL {{
  UNWIND $sentences AS r MATCH (c:Chunk {{id: r.id}})
  WHERE coalesce(c.sentence_starts, []) <> r.ss OR coalesce(c.sentence_ends, []) <> r.se
  SET c.sentence_starts = r.ss, c.sentence_ends = r.se, c.sentence_vectors = NULL
  RETURN count(*) AS sentenced
}}
RETURN grown
"""
"""The replacement of a batch's graphs, in one query (module docstring)."""
