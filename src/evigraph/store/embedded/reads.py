"""Read queries on the embedded graph; each runs inside a read-only transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.models import ChunkHit, EntityHit, Neighbour, StoreCounts, StoredDocument, embedding_text
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import CHUNK_FTS, ENTITY_FTS, META_TABLE, fts_text

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


def fts_terms(query: str) -> str:
    """A question in the index's form; the full-text syntax would read quotes or colons as operators."""
    return fts_text(query)


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
                  r.fact AS fact, r.confidence AS conf, r.source_chunks AS src"""


def _neighbour(r: dict[str, Any], hop: int) -> Neighbour:
    return Neighbour(
        id=r["rid"],
        source=r["s"],
        source_name=r["s_name"],
        type=r["type"],
        fact=r["fact"],
        target=r["d"],
        target_name=r["d_name"],
        confidence=float(r["conf"]),
        hop=hop,
        source_chunks=list(r["src"] or []),
    )


_HOP_OUT = f"""UNWIND $ids AS eid MATCH (a:Entity {{id: eid}})-[r:RELATES]->(b:Entity)
               RETURN {_HOP_FIELDS}, b.id AS other ORDER BY conf DESC LIMIT $cap"""
_HOP_IN = f"""UNWIND $ids AS eid MATCH (a:Entity)-[r:RELATES]->(b:Entity {{id: eid}})
              RETURN {_HOP_FIELDS}, a.id AS other ORDER BY conf DESC LIMIT $cap"""


def neighbours(tx: Tx, entity_ids: Sequence[str], hops: int, limit: int) -> list[Neighbour]:
    """Breadth-first over RELATES in either direction, one hop per query so nearer hops come first.

    Each hop may take an equal share of what the cap has left, so a busy first hop cannot crowd
    out the deeper hops a multi-hop question needs; a sparse hop leaves its share to the next.
    """
    seen_rel: set[str] = set()
    visited = set(entity_ids)
    frontier = list(dict.fromkeys(entity_ids))
    out: list[Neighbour] = []
    for hop in range(1, hops + 1):
        if not frontier or len(out) >= limit:
            break
        allowance = -(-(limit - len(out)) // (hops - hop + 1))
        params = {"ids": frontier, "cap": max(allowance * 4, 50)}
        rows = tx.rows(_HOP_OUT, params) + tx.rows(_HOP_IN, params)
        rows.sort(key=lambda r: (-float(r["conf"]), r["rid"]))
        nxt: list[str] = []
        taken = 0
        for r in rows:
            if r["rid"] in seen_rel:
                continue
            seen_rel.add(r["rid"])
            out.append(_neighbour(r, hop))
            taken += 1
            if r["other"] not in visited:
                visited.add(r["other"])
                nxt.append(r["other"])
            if taken >= allowance:
                break
        frontier = nxt
    return out


def run_query(tx: Tx, cypher: str, params: dict[str, Any] | None, limit: int) -> list[dict[str, Any]]:
    return tx.rows(cypher, params, limit=limit)


_CHUNK_FIELDS = """c.id AS id, c.document AS document, d.title AS title, d.path AS path, c.index AS index,
                   c.text AS text, c.page AS page, c.char_start AS cs, c.char_end AS ce,
                   c.breadcrumbs AS breadcrumbs"""


def _chunk_hit(r: dict[str, Any], score: float = 0.0) -> ChunkHit:
    return ChunkHit(
        id=r["id"],
        document=r["document"],
        title=r["title"] or "",
        path=r["path"],
        index=int(r["index"]),
        text=r["text"],
        score=score,
        page=r["page"],
        start=int(r["cs"] or 0),
        end=int(r["ce"] or 0),
        breadcrumbs=list(r["breadcrumbs"] or []),
    )


def chunks_by_ids(tx: Tx, ids: Sequence[str]) -> list[ChunkHit]:
    rows = tx.rows(
        f"UNWIND $ids AS cid MATCH (c:Chunk {{id: cid}})-[:PART_OF]->(d:Document) RETURN {_CHUNK_FIELDS}",
        {"ids": list(ids)},
    )
    by_id = {r["id"]: _chunk_hit(r) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def chunks_for_entities(tx: Tx, entity_ids: Sequence[str], per_entity: int) -> list[tuple[str, str]]:
    """(entity id, chunk id) pairs: the passages that mention each entity, at most `per_entity` each."""
    rows = tx.rows(
        """UNWIND $ids AS eid MATCH (e:Entity {id: eid})-[:MENTIONED_IN]->(c:Chunk)
           WITH eid, collect(c.id) AS chunks RETURN eid, chunks""",
        {"ids": list(entity_ids)},
    )
    out: list[tuple[str, str]] = []
    for r in rows:
        out.extend((r["eid"], cid) for cid in sorted(r["chunks"])[:per_entity])
    return out


def search_entities(tx: Tx, query: str, limit: int) -> list[EntityHit]:
    terms = fts_terms(query)
    if not terms:
        return []
    rows = tx.rows(
        f"""CALL QUERY_FTS_INDEX('Entity', '{ENTITY_FTS}', $q, top := $k)
            RETURN node.id AS id, node.name AS name, node.label AS label, node.description AS description, score
            ORDER BY score DESC""",
        {"q": terms, "k": limit},
    )
    return [
        EntityHit(id=r["id"], name=r["name"], label=r["label"], description=r["description"] or "", score=r["score"])
        for r in rows
    ]


def entities_by_ids(tx: Tx, ids: Sequence[str]) -> list[EntityHit]:
    rows = tx.rows(
        """UNWIND $ids AS eid MATCH (e:Entity {id: eid})
           RETURN e.id AS id, e.name AS name, e.label AS label, e.description AS description""",
        {"ids": list(ids)},
    )
    by_id = {r["id"]: EntityHit(**{**r, "description": r["description"] or ""}) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def relations_for_chunks(tx: Tx, chunk_ids: Sequence[str], limit: int) -> list[Neighbour]:
    """Relations stated in the given passages (found through the entities they mention)."""
    rows = tx.rows(
        f"""UNWIND $ids AS cid MATCH (c:Chunk {{id: cid}})<-[:MENTIONED_IN]-(a:Entity)-[r:RELATES]->(b:Entity)
            RETURN c.id AS chunk, {_HOP_FIELDS}""",
        {"ids": list(chunk_ids)},
    )
    out: dict[str, Neighbour] = {}
    for r in rows:
        if r["rid"] not in out and r["chunk"] in (r["src"] or []):
            out[r["rid"]] = _neighbour(r, hop=1)
            if len(out) >= limit:
                break
    return list(out.values())


def vector_rows(tx: Tx) -> list[tuple[str, list[float]]]:
    rows = tx.rows("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN c.id AS id, c.embedding AS v")
    return [(r["id"], r["v"]) for r in rows if r["v"]]


def name_rows(tx: Tx) -> list[tuple[str, str, list[str]]]:
    rows = tx.rows("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases")
    return [(r["id"], r["name"], list(r["aliases"] or [])) for r in rows]


def pending_embeddings(tx: Tx, limit: int) -> list[tuple[str, str]]:
    rows = tx.rows(
        """MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE c.embedding IS NULL
           RETURN c.id AS id, d.title AS title, c.text AS text LIMIT $k""",
        {"k": limit},
    )
    return [(r["id"], embedding_text(r["title"] or "", r["text"])) for r in rows]


def count_pending_embeddings(tx: Tx) -> int:
    return int(tx.column("MATCH (c:Chunk) WHERE c.embedding IS NULL RETURN count(c)")[0])


def get_meta(tx: Tx, key: str) -> str | None:
    rows = tx.rows(f"MATCH (m:{META_TABLE} {{key: $k}}) RETURN m.value AS v", {"k": key})
    return rows[0]["v"] if rows else None
