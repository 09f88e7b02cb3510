"""Read queries on the embedded graph; each runs inside a read-only transaction."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from evigraph.models import ChunkHit, Neighbour, StoreCounts, StoredDocument
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import CHUNK_FTS

_DOC_FIELDS = """d.key AS key, d.title AS title, d.path AS path, d.content_hash AS content_hash,
                 d.version AS version, d.loader AS loader, d.chunk_count AS chunks"""


def _document(row: dict[str, Any]) -> StoredDocument:
    return StoredDocument(
        key=row["key"],
        title=row["title"] or "",
        path=row["path"],
        content_hash=row["content_hash"] or "",
        version=int(row["version"] or 0),
        loader=row["loader"] or "",
        chunks=int(row["chunks"] or 0),
    )


def get_documents(tx: Tx, keys: Sequence[str]) -> dict[str, StoredDocument]:
    rows = tx.rows(f"UNWIND $keys AS k MATCH (d:Document {{key: k}}) RETURN {_DOC_FIELDS}", {"keys": list(keys)})
    return {r["key"]: _document(r) for r in rows}


def list_documents(tx: Tx, limit: int, offset: int) -> list[StoredDocument]:
    rows = tx.rows(
        f"MATCH (d:Document) RETURN {_DOC_FIELDS} ORDER BY d.key SKIP $offset LIMIT $limit",
        {"offset": offset, "limit": limit},
    )
    return [_document(r) for r in rows]


def counts(tx: Tx) -> StoreCounts:
    labels = {r["label"]: int(r["n"]) for r in tx.rows("MATCH (e:Entity) RETURN e.label AS label, count(*) AS n")}
    types = {r["type"]: int(r["n"]) for r in tx.rows("MATCH ()-[r:RELATES]->() RETURN r.type AS type, count(*) AS n")}
    return StoreCounts(
        documents=int(tx.column("MATCH (d:Document) RETURN count(d)")[0]),
        chunks=int(tx.column("MATCH (c:Chunk) RETURN count(c)")[0]),
        entities=sum(labels.values()),
        relations=sum(types.values()),
        mentions=int(tx.column("MATCH ()-[m:MENTIONED_IN]->() RETURN count(m)")[0]),
        labels=dict(sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))),
        relation_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


_FTS_SPECIAL = re.compile(r"[^\w\s]", re.UNICODE)


def fts_terms(query: str) -> str:
    """Reduce a question to plain terms: the full-text syntax would read quotes or colons as operators."""
    return " ".join(_FTS_SPECIAL.sub(" ", query).split())


def search_chunks(tx: Tx, query: str, limit: int) -> list[ChunkHit]:
    terms = fts_terms(query)
    if not terms:
        return []
    rows = tx.rows(
        f"""CALL QUERY_FTS_INDEX('Chunk', '{CHUNK_FTS}', $q, top := $k)
            MATCH (node)-[:PART_OF]->(d:Document)
            RETURN node.id AS id, node.document AS document, d.title AS title, d.path AS path,
                   node.index AS index, node.text AS text, score, node.page AS page,
                   node.char_start AS cs, node.char_end AS ce, node.breadcrumbs AS breadcrumbs
            ORDER BY score DESC""",
        {"q": terms, "k": limit},
    )
    return [
        ChunkHit(
            id=r["id"],
            document=r["document"],
            title=r["title"] or "",
            path=r["path"],
            index=int(r["index"]),
            text=r["text"],
            score=float(r["score"]),
            page=r["page"],
            start=int(r["cs"] or 0),
            end=int(r["ce"] or 0),
            breadcrumbs=list(r["breadcrumbs"] or []),
        )
        for r in rows
    ]


_HOP_FIELDS = """r.id AS rid, a.id AS s, b.id AS d, a.name AS s_name, b.name AS d_name, r.type AS type,
                  r.fact AS fact, r.confidence AS conf"""
_HOP_OUT = f"""UNWIND $ids AS eid MATCH (a:Entity {{id: eid}})-[r:RELATES]->(b:Entity)
               RETURN {_HOP_FIELDS}, b.id AS other ORDER BY conf DESC LIMIT $cap"""
_HOP_IN = f"""UNWIND $ids AS eid MATCH (a:Entity)-[r:RELATES]->(b:Entity {{id: eid}})
              RETURN {_HOP_FIELDS}, a.id AS other ORDER BY conf DESC LIMIT $cap"""


def neighbours(tx: Tx, entity_ids: Sequence[str], hops: int, limit: int) -> list[Neighbour]:
    """Breadth-first over RELATES in either direction, one hop per query so nearer hops come first."""
    seen_rel: set[str] = set()
    visited = set(entity_ids)
    frontier = list(dict.fromkeys(entity_ids))
    out: list[Neighbour] = []
    for hop in range(1, hops + 1):
        if not frontier or len(out) >= limit:
            break
        params = {"ids": frontier, "cap": max(limit * 4, 50)}
        rows = tx.rows(_HOP_OUT, params) + tx.rows(_HOP_IN, params)
        rows.sort(key=lambda r: -float(r["conf"]))
        nxt: list[str] = []
        for r in rows:
            if r["rid"] in seen_rel:
                continue
            seen_rel.add(r["rid"])
            out.append(
                Neighbour(
                    source=r["s"],
                    source_name=r["s_name"],
                    type=r["type"],
                    fact=r["fact"],
                    target=r["d"],
                    target_name=r["d_name"],
                    confidence=float(r["conf"]),
                    hop=hop,
                )
            )
            if r["other"] not in visited:
                visited.add(r["other"])
                nxt.append(r["other"])
            if len(out) >= limit:
                break
        frontier = nxt
    return out


def run_query(tx: Tx, cypher: str, params: dict[str, Any] | None, limit: int) -> list[dict[str, Any]]:
    return tx.rows(cypher, params, limit=limit)
