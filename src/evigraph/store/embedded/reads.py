"""Read queries on the embedded graph; each runs inside a read-only transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.models import EntityHit, PassageHit, StoreCounts, StoredDocument, embedding_text
from evigraph.store.core.version_rows import DOC_FIELDS, document_page, stored_document
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import CONTEXT_COLUMN, META_TABLE
from evigraph.store.terms import searchable_text

_DOC_BY_KEY = f"MATCH (d:Document {{key: $key}}) RETURN {DOC_FIELDS}"


KEY_LOOKUP_MAX = 256
"""Up to this many keys are looked up one by one (`each_key`); more are joined in one statement,
which scans every document: 18 ms for 64 keys among 100,000 documents, against 6.6 ms as 64
look-ups. An ingest looks up each batch's keys, 64 by default, and at 100,000 documents those
scans were about a minute of its time."""


def get_documents(tx: Tx, keys: Sequence[str]) -> dict[str, StoredDocument]:
    if len(keys) <= KEY_LOOKUP_MAX:
        rows = each_key(tx, _DOC_BY_KEY, keys)
    else:
        rows = tx.rows(f"UNWIND $keys AS k MATCH (d:Document {{key: k}}) RETURN {DOC_FIELDS}", {"keys": list(keys)})
    return {r["key"]: stored_document(r) for r in rows}


def list_documents(tx: Tx, limit: int, offset: int) -> list[StoredDocument]:
    return document_page(tx.rows, "", limit, offset)


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


_CHUNK_FIELDS = """c.id AS id, c.document AS document, c.version AS version, c.`index` AS `index`,
                   c.text AS text, c.page AS page, c.char_start AS cs, c.char_end AS ce,
                   c.breadcrumbs AS breadcrumbs"""


def chunk_fields(context: bool) -> str:
    """The columns a passage read returns; `context` False on a read-only file from before contexts."""
    return f"{_CHUNK_FIELDS}, {context_of('c', context)} AS context"


def context_of(var: str, context: bool) -> str:
    """The expression reading a chunk's context (`TextChunk.context`), or '' where the column is missing."""
    return f"{var}.{CONTEXT_COLUMN}" if context else "''"


Titles = Mapping[str, tuple[str, str | None]]
"""Document key -> (title, path), every document's (the store caches it, see `titles`).

Passage reads take the title and path from this map instead of joining each passage to its
Document node: the join cost the engine 2-3 ms a query (measured on the 2Wiki dev knowledge base,
1,472 passages: a passage by id 0.5 ms alone, 2.8 ms joined), and a retrieve makes three such
reads. A passage of a document written after the map was built is looked up on its own; one
with no document at all is left out, as the join left it out.
"""


def titles(tx: Tx) -> dict[str, tuple[str, str | None]]:
    rows = tx.rows("MATCH (d:Document) RETURN d.key AS key, d.title AS title, d.path AS path")
    return {r["key"]: (r["title"] or "", r["path"]) for r in rows}


def _chunk_hits(tx: Tx, rows: list[dict[str, Any]], docs: Titles) -> list[PassageHit]:
    """Rows as hits; a document the map lacks (written since the map was built) is read here."""
    unknown = {r["document"] for r in rows} - docs.keys()
    late = titles_of(tx, sorted(unknown)) if unknown else {}
    hits = []
    for r in rows:
        doc = docs.get(r["document"]) or late.get(r["document"])
        if doc is not None:
            hits.append(_chunk_hit(r, doc))
    return hits


def _chunk_hit(r: dict[str, Any], doc: tuple[str, str | None]) -> PassageHit:
    return PassageHit(
        id=r["id"],
        document=r["document"],
        version=int(r["version"] or 0),
        title=doc[0],
        path=doc[1],
        index=int(r["index"]),
        text=r["text"],
        score=0.0,
        page=r["page"],
        start=int(r["cs"] or 0),
        end=int(r["ce"] or 0),
        breadcrumbs=list(r["breadcrumbs"] or []),
        context=r.get("context") or "",
    )


def each_key(tx: Tx, query: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of `query` (one primary-key match on `$key`) for every key, one look-up each.

    The engine plans `UNWIND $keys AS k MATCH (n {id: k})` as a hash join that scans the whole
    table, so a batch cost grew with the table, not with the keys asked: on MuSiQue's dev
    knowledge base (22,457 entities) five entities took 5.5 ms that way and 1.2 ms as five
    look-ups (0.2 ms each, the statement prepared once per connection). Reads that fetch a
    handful of rows per question use this; bulk writes still batch.
    """
    rows: list[dict[str, Any]] = []
    for key in dict.fromkeys(keys):
        rows.extend(tx.rows(query, {"key": key}))
    return rows


def passages_by_ids(tx: Tx, ids: Sequence[str], docs: Titles, context: bool = True) -> list[PassageHit]:
    rows = each_key(tx, f"MATCH (c:Chunk {{id: $key}}) RETURN {chunk_fields(context)}", ids)
    by_id = {hit.id: hit for hit in _chunk_hits(tx, rows, docs)}
    return [by_id[i] for i in ids if i in by_id]


def document_passages(tx: Tx, key: str, limit: int, context: bool = True) -> list[PassageHit]:
    found = titles_of(tx, [key])
    rows = tx.rows(
        f"""MATCH (c:Chunk)-[:PART_OF]->(d:Document {{key: $key}})
            RETURN {chunk_fields(context)} ORDER BY c.`index` LIMIT $limit""",
        {"key": key, "limit": limit},
    )
    return _chunk_hits(tx, rows, found)


def titles_of(tx: Tx, keys: Sequence[str]) -> dict[str, tuple[str, str | None]]:
    """A few documents' titles and paths, one key look-up each (`each_key`): every passage read
    of `document_passages` asks for one, and a batched UNWIND would scan the Document table."""
    rows = each_key(tx, "MATCH (d:Document {key: $key}) RETURN d.key AS key, d.title AS title, d.path AS path", keys)
    return {r["key"]: (r["title"] or "", r["path"]) for r in rows}


def entity_texts(tx: Tx) -> list[tuple[str, str]]:
    """Every entity's id and full-text column, for the entity search index (`bm25`)."""
    rows = tx.rows("MATCH (e:Entity) RETURN e.id AS id, e.search_text AS st")
    return [(r["id"], r["st"] or "") for r in rows]


def entities_by_ids(tx: Tx, ids: Sequence[str]) -> list[EntityHit]:
    rows = each_key(
        tx,
        "MATCH (e:Entity {id: $key}) RETURN e.id AS id, e.name AS name, e.label AS label, e.description AS description",
        ids,
    )
    by_id = {r["id"]: EntityHit(**{**r, "description": r["description"] or ""}) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def vector_rows(tx: Tx) -> list[tuple[str, list[float]]]:
    rows = tx.rows("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN c.id AS id, c.embedding AS v")
    return [(r["id"], r["v"]) for r in rows if r["v"]]


def passage_texts(tx: Tx) -> list[tuple[str, str]]:
    """Every passage's id and full-text column, for the passage search index (`bm25`)."""
    rows = tx.rows("MATCH (c:Chunk) RETURN c.id AS id, c.search_text AS st")
    return [(r["id"], r["st"] or "") for r in rows]


def term_texts(tx: Tx, context: bool = True) -> list[str]:
    """Every passage as full-text search reads it (title, section path, context, text), for term counts."""
    rows = tx.rows(
        f"""MATCH (c:Chunk)-[:PART_OF]->(d:Document)
            RETURN d.title AS title, c.breadcrumbs AS breadcrumbs, c.text AS text, {context_of("c", context)} AS cx"""
    )
    return [searchable_text(r["title"] or "", r["breadcrumbs"] or (), r["text"] or "", r["cx"] or "") for r in rows]


def name_rows(tx: Tx) -> list[tuple[str, str, list[str]]]:
    rows = tx.rows("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases")
    return [(r["id"], r["name"], list(r["aliases"] or [])) for r in rows]


def pending_embeddings(tx: Tx, limit: int, context: bool = True) -> list[tuple[str, str]]:
    rows = tx.rows(
        f"""MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE c.embedding IS NULL
            RETURN c.id AS id, d.title AS title, c.text AS text, {context_of("c", context)} AS cx LIMIT $k""",
        {"k": limit},
    )
    return [(r["id"], embedding_text(r["title"] or "", r["text"], r["cx"] or "")) for r in rows]


def count_pending_embeddings(tx: Tx) -> int:
    return int(tx.column("MATCH (c:Chunk) WHERE c.embedding IS NULL RETURN count(c)")[0])


def get_meta(tx: Tx, key: str) -> str | None:
    rows = tx.rows(f"MATCH (m:{META_TABLE} {{key: $k}}) RETURN m.value AS v", {"k": key})
    return rows[0]["v"] if rows else None
