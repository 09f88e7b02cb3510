"""Finding and repairing damage in an embedded knowledge base: `evigraph check [--repair]`.

Transactions keep every write whole, but the engine has let damage through around them (issue
9): edges left behind by `DETACH DELETE` across a crash, another passage's PART_OF edge removed
when such a delete was replayed (a stray passage, a document short of passages, its entities
orphaned), entities deleted while still mentioned (a wrong `NOT EXISTS`), a full-text index
missing after a crash during creation. The writes no longer do these; this module finds what
older versions or a future engine quirk left.

Everything is read with plain MATCH patterns and compared in Python, never with existence
subqueries (see `writes.delete_orphans`). Edges whose endpoint node was deleted are invisible to
any pattern that reads a property of that endpoint, so they are found by internal ids: a raw scan
of the relationship table returns them with the offsets of nodes that no longer exist.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evigraph.integrity_records import IntegrityProblem
from evigraph.property_types import SOURCES_COLUMN, holds_no_properties
from evigraph.store.core.integrity_report import Problems, dangling_relations, relation_sources
from evigraph.store.embedded import writes
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.packed import pack, unpack_ids
from evigraph.store.embedded.schema import EXTRACTION_SOURCE, META_TABLE, SCHEMA_VERSION, TABLES

REL_ENDPOINTS = {
    "PART_OF": ("Chunk", "Document"),
    "NEXT": ("Chunk", "Chunk"),
    "MENTIONED_IN": ("Entity", "Chunk"),
    "RELATES": ("Entity", "Entity"),
}
_CORE = frozenset({"Document", "Chunk", "Entity", *REL_ENDPOINTS})


@dataclass
class Findings:
    missing_tables: list[str] = field(default_factory=list)
    missing_mark: bool = False
    ghost_edges: dict[str, list[int]] = field(default_factory=dict)
    stray_chunks: list[str] = field(default_factory=list)
    miscounted_documents: list[str] = field(default_factory=list)
    orphan_entities: list[str] = field(default_factory=list)
    dangling_relations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def needs_schema(self) -> bool:
        """Damage only DDL outside a transaction can fix (tables, the mark)."""
        return bool(self.missing_tables or self.missing_mark)


def inspect(tx: Tx) -> Findings:
    """Everything wrong with the knowledge base, read in one (read-only) transaction."""
    found = Findings()
    tables = {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}
    found.missing_tables = sorted(TABLES - tables)
    if META_TABLE in tables:
        rows = tx.rows(
            f"MATCH (m:{META_TABLE}) WHERE m.key IN ['app', 'schema_version'] RETURN m.key AS k, m.value AS v"
        )
        marks = {r["k"]: r["v"] for r in rows}
        found.missing_mark = marks.get("app") != "evigraph" or marks.get("schema_version") != SCHEMA_VERSION
    else:
        found.missing_mark = True
    if not tables >= _CORE:
        return found  # the graph checks below read these tables

    found.ghost_edges = _ghost_edges(tx)
    current = _current_chunks(tx, found)
    _check_documents(tx, found, current)
    mentioned = {
        r["e"]
        for r in tx.rows("MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) RETURN e.id AS e, c.id AS c")
        if r["c"] in current
    }
    # An extracted entity an agent gave properties stands on the agent's word (`writes.delete_orphans`).
    columns = {r["name"] for r in tx.rows("CALL TABLE_INFO('Entity') RETURN name")}
    kept = f" AND {holds_no_properties('e')}" if SOURCES_COLUMN in columns else ""
    extracted = tx.column(f"MATCH (e:Entity) WHERE e._source = $src{kept} RETURN e.id", {"src": EXTRACTION_SOURCE})
    found.orphan_entities = sorted(e for e in extracted if e not in mentioned)
    found.dangling_relations = _dangling_relations(tx, current)
    return found


def _ghost_edges(tx: Tx) -> dict[str, list[int]]:
    """Per relationship table, the edge offsets whose source or target node no longer exists."""
    live = {t: set(tx.column(f"MATCH (n:{t}) RETURN offset(ID(n))")) for t in {"Document", "Chunk", "Entity"}}
    ghosts: dict[str, list[int]] = {}
    for rel, (src, dst) in REL_ENDPOINTS.items():
        rows = tx.rows(f"MATCH (a)-[r:{rel}]->(b) RETURN offset(ID(a)) AS a, offset(ID(b)) AS b, offset(ID(r)) AS r")
        bad = sorted(r["r"] for r in rows if r["a"] not in live[src] or r["b"] not in live[dst])
        if bad:
            ghosts[rel] = bad
    return ghosts


def _current_chunks(tx: Tx, found: Findings) -> set[str]:
    """Chunks that are part of their document's current version; the others are recorded as stray."""
    every = tx.column("MATCH (c:Chunk) RETURN c.id")
    current = {
        r["id"]
        for r in tx.rows(
            """MATCH (c:Chunk)-[:PART_OF]->(d:Document)
               RETURN c.id AS id, c.version AS cv, d.version AS dv, c.document AS cd, d.key AS dk"""
        )
        if r["cv"] == r["dv"] and r["cd"] == r["dk"]
    }
    found.stray_chunks = sorted(set(every) - current)
    return current


def _check_documents(tx: Tx, found: Findings, current: set[str]) -> None:
    per_doc = Counter(
        r["d"]
        for r in tx.rows("MATCH (c:Chunk)-[:PART_OF]->(d:Document) RETURN c.id AS c, d.key AS d")
        if r["c"] in current
    )
    found.miscounted_documents = sorted(
        r["key"]
        for r in tx.rows("MATCH (d:Document) RETURN d.key AS key, d.chunk_count AS n")
        if int(r["n"] or 0) != per_doc.get(r["key"], 0)
    )


def _dangling_relations(tx: Tx, current: set[str]) -> list[dict[str, Any]]:
    """Relations citing passages that are gone, with the sources that remain."""
    props = SOURCES_COLUMN in {r["name"] for r in tx.rows("CALL TABLE_INFO('RELATES') RETURN name")}
    return dangling_relations(tx.rows(relation_sources(props)), current.__contains__, unpack_ids)


def problems(found: Findings) -> list[IntegrityProblem]:
    """The findings as the report shows them: one entry per kind of damage."""
    out = Problems()
    out.add("missing_tables", found.missing_tables, "tables of the schema are missing (repair creates them)")
    out.missing_mark(found.missing_mark)
    for rel, offsets in sorted(found.ghost_edges.items()):
        out.add(
            f"ghost_edges.{rel}",
            [str(o) for o in offsets],
            f"{rel} edges whose endpoint node was deleted (left by a crash after DETACH DELETE)",
        )
    out.passages(found.stray_chunks, found.miscounted_documents)
    out.add("orphan_entities", found.orphan_entities, "extracted entities that no current passage mentions")
    out.dangling(found.dangling_relations)
    return out.found


def repair(tx: Tx) -> dict[str, int]:
    """Fix what a transaction can; return how many items of each kind were fixed.

    Deletions go relationships first, as every delete in `writes` does. Orphans and relation
    sources are looked at again after stray passages go, since removing them can orphan more.
    """
    fixed: dict[str, int] = {}
    found = inspect(tx)
    for rel, offsets in found.ghost_edges.items():
        # Filtered after a WITH: a WHERE on the pattern itself is pushed into the scan, which
        # reads the backward index, where the engine did drop these edges.
        tx.run_batched(f"MATCH ()-[r:{rel}]->() WITH r, offset(ID(r)) AS o WHERE o IN $rows DELETE r", offsets)
        fixed[f"ghost_edges.{rel}"] = len(offsets)
    if found.stray_chunks:
        writes.delete_chunks(tx, found.stray_chunks)
        fixed["stray_chunks"] = len(found.stray_chunks)
        found = inspect(tx)
    if found.dangling_relations:
        _prune_sources(tx, found.dangling_relations)
        fixed["dangling_relation_sources"] = len(found.dangling_relations)
        found = inspect(tx)
    if found.orphan_entities:
        writes.delete_entities(tx, found.orphan_entities)
        fixed["orphan_entities"] = len(found.orphan_entities)
    if found.miscounted_documents:
        tx.run_batched(
            "UNWIND $rows AS k MATCH (d:Document {key: k}) SET d.content_hash = ''", found.miscounted_documents
        )
        fixed["miscounted_documents_marked_changed"] = len(found.miscounted_documents)
    return fixed


def _prune_sources(tx: Tx, relations: list[dict[str, Any]]) -> None:
    """Keep the passages that still exist; an extracted relation citing none goes, one an agent
    stands by (`dangling_relations`) stays."""
    keep = [r for r in relations if r["src"] or r["owned"]]
    drop = [r for r in relations if not r["src"] and not r["owned"]]
    tx.run_batched(
        """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid, r.src AS src
           MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
           SET x.source_chunks = src""",
        [{"s": r["s"], "d": r["d"], "id": r["id"], "src": pack(r["src"])} for r in keep],
    )
    tx.run_batched(
        """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid
           MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid DELETE x""",
        [{k: r[k] for k in ("s", "d", "id")} for r in drop],
    )


def snapshot(tx: Tx) -> dict[str, frozenset[tuple[Any, ...]]]:
    """What the graph holds, free of history (version numbers, chunk ids, timestamps).

    Two knowledge bases with equal snapshots answer alike: the same documents and passages, the
    same entities, mentions and relations. Crash and update tests compare one with a fresh ingest.
    """
    return {
        "documents": frozenset(
            (r["k"], r["t"], r["h"], r["n"])
            for r in tx.rows(
                "MATCH (d:Document) RETURN d.key AS k, d.title AS t, d.content_hash AS h, d.chunk_count AS n"
            )
        ),
        "chunks": frozenset(
            (r["d"], r["i"], r["t"])
            for r in tx.rows("MATCH (c:Chunk)-[:PART_OF]->(d:Document) RETURN d.key AS d, c.`index` AS i, c.text AS t")
        ),
        "entities": frozenset(
            (r["i"], r["n"], r["l"]) for r in tx.rows("MATCH (e:Entity) RETURN e.id AS i, e.name AS n, e.label AS l")
        ),
        "mentions": frozenset(
            (r["e"], r["d"], r["i"])
            for r in tx.rows(
                """MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk)-[:PART_OF]->(d:Document)
                   RETURN e.id AS e, d.key AS d, c.`index` AS i"""
            )
        ),
        "relations": frozenset(
            (r["i"], r["s"], r["d"], r["t"])
            for r in tx.rows(
                "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN r.id AS i, a.id AS s, b.id AS d, r.type AS t"
            )
        ),
    }
