"""Reads on FalkorDB: documents, passages, entities, full-text and vector search.

A version being written, or abandoned by a crashed writer, is made of `PendingChunk` nodes no read
here names (see `documents.py`); passage reads also keep to `live` ones, as an earlier evigraph
put passages aside as `Chunk`s. Entity and relation reads need no filter: a version's entities,
mentions and relation sources are written by the query that switches it in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.models import EntityHit, PassageHit, StoreCounts, StoredDocument
from evigraph.store.base import VectorSearch
from evigraph.store.core.code_rows import count_code
from evigraph.store.core.version_rows import DOC_FIELDS, document_page, stored_document
from evigraph.store.falkordb.connection import Connection
from evigraph.store.terms import searchable_text

CHUNK_FIELDS = """c.id AS id, c.document AS document, c.version AS version, c.index AS index, c.text AS text,
                  c.page AS page, c.char_start AS cs, c.char_end AS ce, c.breadcrumbs AS breadcrumbs,
                  c.passage_context AS context, d.title AS title, d.path AS path"""
VECTOR_OVERFETCH = 4
"""Nearest neighbours asked of the index per passage wanted: some may be passages of a version
not switched in yet, which are dropped."""


def get_documents(conn: Connection, keys: Sequence[str]) -> dict[str, StoredDocument]:
    rows = conn.read_sync(
        f"UNWIND $keys AS k MATCH (d:Document {{key: k}}) WHERE d.version IS NOT NULL RETURN {DOC_FIELDS}",
        {"keys": list(keys)},
    )
    return {r["key"]: stored_document(r) for r in rows}


def list_documents(conn: Connection, limit: int, offset: int) -> list[StoredDocument]:
    return document_page(conn.read_sync, "WHERE d.version IS NOT NULL", limit, offset)


def counts(conn: Connection) -> StoreCounts:
    labels = {
        r["label"]: int(r["n"]) for r in conn.read_sync("MATCH (e:Entity) RETURN e.label AS label, count(*) AS n")
    }
    types = {
        r["type"]: int(r["n"]) for r in conn.read_sync("MATCH ()-[r:RELATES]->() RETURN r.type AS type, count(*) AS n")
    }
    one = conn.read_sync(
        """MATCH (d:Document) WHERE d.version IS NOT NULL WITH count(d) AS docs
           OPTIONAL MATCH (c:Chunk) WHERE c.live WITH docs, count(c) AS chunks
           OPTIONAL MATCH (:Entity)-[m:MENTIONED_IN]->(c:Chunk) WHERE c.live
           RETURN docs, chunks, count(m) AS mentions"""
    )[0]
    return StoreCounts(
        documents=int(one["docs"]),
        chunks=int(one["chunks"]),
        entities=sum(labels.values()),
        relations=sum(types.values()),
        mentions=int(one["mentions"]),
        labels=dict(sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))),
        relation_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
        code=count_code(lambda query: conn.read_sync(query)),
    )


def chunk_hit(r: dict[str, Any], score: float = 0.0) -> PassageHit:
    return PassageHit(
        id=r["id"],
        document=r["document"],
        version=int(r["version"] or 0),
        title=r["title"] or "",
        path=r["path"],
        index=int(r["index"]),
        text=r["text"],
        score=score,
        page=r["page"],
        start=int(r["cs"] or 0),
        end=int(r["ce"] or 0),
        breadcrumbs=list(r["breadcrumbs"] or []),
        context=r.get("context") or "",
    )


def passage_texts(conn: Connection) -> list[tuple[str, str]]:
    """Every live passage's id and full-text column, for the passage search index (`bm25`)."""
    rows = conn.read_sync("MATCH (c:Chunk) WHERE c.live RETURN c.id AS id, c.search_text AS st")
    return [(r["id"], r["st"] or "") for r in rows]


def passages_by_ids(conn: Connection, ids: Sequence[str]) -> list[PassageHit]:
    rows = conn.read_sync(
        f"""UNWIND $ids AS i MATCH (c:Chunk {{id: i}}) WHERE c.live
            MATCH (c)-[:PART_OF]->(d:Document) RETURN {CHUNK_FIELDS}""",
        {"ids": list(dict.fromkeys(ids))},
    )
    found = {r["id"]: chunk_hit(r) for r in rows}
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def document_passages(conn: Connection, key: str, limit: int) -> list[PassageHit]:
    rows = conn.read_sync(
        f"""MATCH (c:Chunk {{document: $key}}) WHERE c.live MATCH (c)-[:PART_OF]->(d:Document)
            RETURN {CHUNK_FIELDS} ORDER BY c.index LIMIT $limit""",
        {"key": key, "limit": limit},
    )
    return [chunk_hit(r) for r in rows]


def entity_texts(conn: Connection) -> list[tuple[str, str]]:
    """Every entity's id and full-text column, for the entity search index (`bm25`)."""
    rows = conn.read_sync("MATCH (e:Entity) RETURN e.id AS id, e.search_text AS st")
    return [(r["id"], r["st"] or "") for r in rows]


def entity_hit(r: dict[str, Any], score: float = 0.0) -> EntityHit:
    return EntityHit(id=r["id"], name=r["name"], label=r["label"], description=r["description"] or "", score=score)


def entities_by_ids(conn: Connection, ids: Sequence[str]) -> list[EntityHit]:
    rows = conn.read_sync(
        """UNWIND $ids AS i MATCH (e:Entity {id: i})
           RETURN e.id AS id, e.name AS name, e.label AS label, e.description AS description""",
        {"ids": list(dict.fromkeys(ids))},
    )
    found = {r["id"]: entity_hit(r) for r in rows}
    return [found[i] for i in ids if i in found]


def vector_search(conn: Connection, vector: Sequence[float], limit: int) -> list[tuple[str, float]]:
    """Nearest live passages by the server's HNSW index; scores are cosine similarities."""
    rows = conn.read_sync(
        """CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node, score
           WITH node AS c, score WHERE c.live RETURN c.id AS id, score ORDER BY score LIMIT $limit""",
        {"k": max(limit * VECTOR_OVERFETCH, limit), "v": [float(x) for x in vector], "limit": limit},
    )
    return [(r["id"], 1.0 - float(r["score"])) for r in rows]


def vector_stats(
    conn: Connection, vector: Sequence[float], limit: int, passages: int, mean: float, std: float
) -> VectorSearch:
    return VectorSearch(vector_search(conn, vector, limit), passages, mean, std)


def term_texts(conn: Connection) -> list[str]:
    rows = conn.read_sync(
        """MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE c.live
           RETURN d.title AS title, c.breadcrumbs AS breadcrumbs, c.text AS text, c.passage_context AS cx"""
    )
    return [searchable_text(r["title"] or "", r["breadcrumbs"] or (), r["text"] or "", r["cx"] or "") for r in rows]


def name_rows(conn: Connection) -> list[tuple[str, str, list[str]]]:
    rows = conn.read_sync("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases")
    return [(r["id"], r["name"], list(r["aliases"] or [])) for r in rows]


def vector_rows(conn: Connection) -> list[tuple[str, list[float]]]:
    rows = conn.read_sync(
        "MATCH (c:Chunk) WHERE c.live AND c.embedding IS NOT NULL RETURN c.id AS id, c.embedding AS v"
    )
    return [(r["id"], list(r["v"])) for r in rows if r["v"]]


def get_meta(conn: Connection, key: str) -> str | None:
    rows = conn.read_sync("MATCH (m:EvigraphMeta {key: $k}) RETURN m.value AS v", {"k": key})
    return rows[0]["v"] if rows else None
