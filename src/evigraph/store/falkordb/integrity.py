"""Integrity of a knowledge base on FalkorDB: what `check` finds and `repair` fixes.

The server runs each query whole, so the embedded engine's damage (ghost edges, half-replayed
deletes) cannot happen here; what can is a writer stopping between the queries of a document
write (`documents.py`) or a merge (`merging.py`):

- abandoned passages: written aside (`PendingChunk`) and never switched in. Those of a version
  older than the document's current one can never be switched in and go at once; those of a
  writer whose lease (`leases.py`) is gone (lapsed, or its connection closed) too, however recent.
  A live writer's are never reported, nor removed. Passages an earlier evigraph put aside (`Chunk`
  with `live = false`, unmarked) only once they have been seen pending for longer than
  `PENDING_GRACE_S` (they carry no time, so `check` notes when it first sees each, in a hash
  beside the graph);
- stray passages: live, but not part of their document's current version (the document is
  gone, its version differs, or the PART_OF edge is missing);
- miscounted documents (reported, and marked changed on repair, as the embedded store does);
- relations citing passages that no longer exist;
- orphan extracted entities: no passage mentions them. A document write creates its entities
  with their mentions in one query, but deletes the ones it leaves unmentioned a few queries
  later, so while any writer holds a lease only those older than the grace period are reported;
  with none, every one is;
- unfinished merges: a merged-away entity still beside its redirect (`merging.py`);
- missing indexes and a missing schema mark.

Repair deletes or fixes each, re-checking every condition inside the query that acts on it, and
holds the merge lock (`locks.ServerLock`) so it never interleaves with a merge.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from evigraph.integrity_records import IntegrityProblem
from evigraph.property_types import holds_no_properties
from evigraph.store.core.integrity_report import Problems, dangling_relations, relation_sources
from evigraph.store.core.schema_names import EXTRACTION_SOURCE, META_TABLE
from evigraph.store.falkordb import merging
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.documents import delete_orphans, prune_relation_sources
from evigraph.store.falkordb.index_changes import change_indexes, missing_indexes
from evigraph.store.falkordb.leases import live_writers
from evigraph.store.falkordb.schema import PENDING_CHUNK, SCHEMA_VERSION
from evigraph.store.merging import EntityMerge

PENDING_GRACE_S = 3600.0
"""How long a passage an earlier evigraph put aside (no writer's lease marks it) may stay so, or an
extracted entity stay unmentioned while some writer is live, before `check` calls it abandoned:
far longer than any one document write takes."""


# -- integrity ---------------------------------------------------------------------------------


@dataclass
class Findings:
    missing_mark: bool = False
    missing_indexes: list[str] = field(default_factory=list)
    abandoned_chunks: list[str] = field(default_factory=list)
    stray_chunks: list[str] = field(default_factory=list)
    miscounted_documents: list[str] = field(default_factory=list)
    dangling_relations: list[dict[str, Any]] = field(default_factory=list)
    orphan_entities: list[str] = field(default_factory=list)
    unfinished_merges: dict[str, str] = field(default_factory=dict)


def inspect(conn: Connection, *, note_pending: bool, grace_s: float = PENDING_GRACE_S) -> Findings:
    """Everything wrong with the graph, each kind read by one query (the graph may change between
    them; repair re-checks each condition where it acts)."""
    found = Findings()
    marks = {
        r["k"]: r["v"]
        for r in conn.read_sync(
            f"MATCH (m:{META_TABLE}) WHERE m.key IN ['app', 'schema_version'] RETURN m.key AS k, m.value AS v"
        )
    }
    found.missing_mark = marks.get("app") != "evigraph" or marks.get("schema_version") != SCHEMA_VERSION
    found.missing_indexes = missing_indexes(conn)
    found.abandoned_chunks = _abandoned_chunks(conn, note_pending, grace_s)
    found.stray_chunks = sorted(
        r["id"]
        for r in conn.read_sync(
            """MATCH (c:Chunk) WHERE c.live
               OPTIONAL MATCH (c)-[:PART_OF]->(d:Document) WHERE d.key = c.document AND d.version = c.version
               WITH c, d WHERE d IS NULL RETURN c.id AS id"""
        )
    )
    per_doc = Counter(
        r["d"]
        for r in conn.read_sync(
            """MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE c.live AND c.version = d.version
               AND c.document = d.key RETURN d.key AS d"""
        )
    )
    found.miscounted_documents = sorted(
        r["key"]
        for r in conn.read_sync(
            "MATCH (d:Document) WHERE d.version IS NOT NULL RETURN d.key AS key, d.chunk_count AS n"
        )
        if int(r["n"] or 0) != per_doc.get(r["key"], 0)
    )
    found.dangling_relations = _dangling_relations(conn)
    cutoff = _orphan_cutoff(conn, grace_s)
    found.orphan_entities = sorted(
        r["id"]
        for r in conn.read_sync(
            f"""MATCH (e:Entity) WHERE e._source = $src AND NOT (e)-[:MENTIONED_IN]->(:Chunk)
                   AND {holds_no_properties("e")}
               RETURN e.id AS id, e._created_at AS at""",  # one with an agent's properties stays
            {"src": EXTRACTION_SOURCE},
        )
        if not isinstance(r["at"], str) or r["at"] < cutoff
    )
    found.unfinished_merges = merging.unfinished_merges(conn)
    return found


def _orphan_cutoff(conn: Connection, grace_s: float) -> str:
    """Unmentioned entities created before this time are orphans: now when no writer is live (none
    is about to delete the ones it left), else the grace period ago."""
    ago = grace_s if live_writers(conn) else 0.0
    return (datetime.now(UTC) - timedelta(seconds=ago)).isoformat()


def _pending_key(conn: Connection) -> str:
    return f"evigraph:pending-seen:{conn.graph_name}"


def _abandoned_chunks(conn: Connection, note_pending: bool, grace_s: float) -> list[str]:
    rows = [
        *conn.read_sync(
            f"""MATCH (c:{PENDING_CHUNK}) OPTIONAL MATCH (d:Document {{key: c.document}})
                RETURN c.id AS id, c.version AS v, d.version AS dv, c._writer AS w"""
        ),
        *conn.read_sync(  # aside as an earlier evigraph put passages aside
            """MATCH (c:Chunk) WHERE NOT coalesce(c.live, false)
               OPTIONAL MATCH (d:Document {key: c.document})
               RETURN c.id AS id, c.version AS v, d.version AS dv, null AS w"""
        ),
    ]
    superseded = {r["id"] for r in rows if r["dv"] is not None and int(r["v"] or 0) <= int(r["dv"])}
    marked = {r["id"]: str(r["w"]) for r in rows if r["w"] is not None and r["id"] not in superseded}
    live = live_writers(conn, set(marked.values()))
    dead = _still_pending(conn, [cid for cid, w in marked.items() if w not in live])
    waiting = sorted({r["id"] for r in rows} - superseded - set(marked))
    key = _pending_key(conn)
    now = time.time()
    seen: dict[str, float] = {}
    for name, at in _hash_items(conn.command("HGETALL", key)):
        seen[name] = float(at)
    stale = {cid for cid in waiting if cid in seen and now - seen[cid] > grace_s}
    if note_pending:
        fresh = [x for cid in waiting if cid not in seen for x in (cid, repr(now))]
        if fresh:
            conn.command("HSET", key, *fresh)
        pending = set(waiting)
        gone = [cid for cid in seen if cid not in pending]
        if gone:
            conn.command("HDEL", key, *gone)
    return sorted(superseded | dead | stale)


def _still_pending(conn: Connection, ids: Sequence[str]) -> set[str]:
    """Of `ids`, the passages still aside: one whose writer finished between the read of the
    passages and that of the leases was switched in or deleted meanwhile."""
    if not ids:
        return set()
    rows = conn.read_sync(f"UNWIND $ids AS i MATCH (c:{PENDING_CHUNK} {{id: i}}) RETURN c.id AS id", {"ids": list(ids)})
    return {r["id"] for r in rows}


def _hash_items(reply: Any) -> list[tuple[str, str]]:
    """`HGETALL` as pairs, whether the client answered a flat list or a map."""
    items = list(reply.items()) if isinstance(reply, dict) else list(zip(reply[::2], reply[1::2], strict=False))
    return [(_text(k), _text(v)) for k, v in items]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _dangling_relations(conn: Connection) -> list[dict[str, Any]]:
    """Relations citing passages that do not exist (live or being written), with those that do."""
    exists = {r["id"] for r in conn.read_sync("MATCH (c:Chunk) RETURN c.id AS id")}
    return dangling_relations(conn.read_sync(relation_sources()), exists.__contains__, lambda src: list(src or []))


def problems(found: Findings) -> list[IntegrityProblem]:
    """The findings as the report shows them: one entry per kind of damage."""
    out = Problems()
    out.missing_mark(found.missing_mark)
    out.add("missing_indexes", found.missing_indexes, "look-ups and full-text search need these indexes")
    out.add(
        "abandoned_chunks",
        found.abandoned_chunks,
        "passages written aside by a document write that never switched them in (a writer stopped "
        "or lost to a newer version)",
    )
    out.passages(found.stray_chunks, found.miscounted_documents)
    out.dangling(found.dangling_relations)
    out.add("orphan_entities", found.orphan_entities, "extracted entities that no passage mentions")
    out.add(
        "unfinished_merges",
        sorted(found.unfinished_merges),
        "merged-away entities still beside their redirect (a merge stopped midway); repair finishes the merge",
    )
    return out.found


def repair(conn: Connection, found: Findings, *, renew: Callable[[], None], grace_s: float) -> dict[str, int]:
    """Fix what was found; returns how many items of each kind were fixed (the caller holds the
    merge lock). Each delete re-checks its condition in the same query."""
    fixed: dict[str, int] = {}
    if found.missing_mark:
        conn.write_sync(
            f"MERGE (a:{META_TABLE} {{key: 'app'}}) SET a.value = 'evigraph' "
            f"MERGE (v:{META_TABLE} {{key: 'schema_version'}}) SET v.value = $v",
            {"v": SCHEMA_VERSION},
        )
        fixed["missing_schema_mark"] = 1
    change_indexes(conn, found.missing_indexes)
    if found.missing_indexes:
        fixed["missing_indexes"] = len(found.missing_indexes)
    gone: list[str] = []
    mentioned: set[str] = set()
    if found.abandoned_chunks:
        aside = "MATCH (c:Chunk {id: i}) WHERE NOT coalesce(c.live, false)"  # as an earlier evigraph left them
        for match in (f"MATCH (c:{PENDING_CHUNK} {{id: i}})", aside):
            ids, holders = _delete_ids(conn, match, found.abandoned_chunks)
            gone, mentioned = gone + ids, mentioned | holders
        fixed["abandoned_chunks"] = len(found.abandoned_chunks)
    if found.stray_chunks:
        ids, holders = _delete_ids(
            conn,
            """MATCH (c:Chunk {id: i}) WHERE c.live
               OPTIONAL MATCH (c)-[:PART_OF]->(d:Document) WHERE d.key = c.document AND d.version = c.version
               WITH c, d WHERE d IS NULL""",
            found.stray_chunks,
        )
        gone, mentioned = gone + ids, mentioned | holders
        fixed["stray_chunks"] = len(found.stray_chunks)
    renew()
    candidates = prune_relation_sources(conn, gone) if gone else set()
    if gone:
        delete_orphans(conn, candidates | mentioned)  # entities only the deleted passages named
        found.dangling_relations = _dangling_relations(conn)
    if found.dangling_relations:
        _prune_sources(conn, found.dangling_relations)
        fixed["dangling_relation_sources"] = len(found.dangling_relations)
    if found.orphan_entities:
        cutoff = _orphan_cutoff(conn, grace_s)
        conn.write_sync(
            """UNWIND $ids AS i MATCH (e:Entity {id: i})
               WHERE e._source = $src AND NOT (e)-[:MENTIONED_IN]->(:Chunk)
                 AND (e._created_at IS NULL OR e._created_at < $cutoff)
               DETACH DELETE e""",
            {"ids": found.orphan_entities, "src": EXTRACTION_SOURCE, "cutoff": cutoff},
        )
        fixed["orphan_entities"] = len(found.orphan_entities)
    if found.miscounted_documents:
        conn.write_sync(
            "UNWIND $keys AS k MATCH (d:Document {key: k}) SET d.content_hash = ''",
            {"keys": found.miscounted_documents},
        )
        fixed["miscounted_documents_marked_changed"] = len(found.miscounted_documents)
    if found.unfinished_merges:
        renew()
        by_survivor: dict[str, list[str]] = {}
        for old, survivor in sorted(found.unfinished_merges.items()):
            by_survivor.setdefault(survivor, []).append(old)
        outcome = merging.merge_entities(
            conn, [EntityMerge(survivor=s, merged=tuple(olds)) for s, olds in by_survivor.items()], renew=renew
        )
        fixed["unfinished_merges"] = outcome.merged
    return fixed


def _delete_ids(conn: Connection, match: str, ids: Sequence[str]) -> tuple[list[str], set[str]]:
    """DETACH DELETE the chunks `match` (binding `c` from the id `i`) still selects; returns their
    ids and the entities that mentioned them (which may now be orphans)."""
    out: list[str] = []
    mentioned: set[str] = set()
    for start in range(0, len(ids), 2000):
        rows = conn.write_sync(
            f"""UNWIND $ids AS i {match}
                OPTIONAL MATCH (e:Entity)-[:MENTIONED_IN]->(c)
                WITH c, collect(e.id) AS es
                WITH collect(c) AS cs, collect(c.id) AS ids, collect(es) AS ess
                FOREACH (c IN cs | DETACH DELETE c)
                RETURN ids, reduce(acc = [], x IN ess | acc + x) AS es""",
            {"ids": list(ids[start : start + 2000])},
        )
        if rows:
            out += list(rows[0]["ids"] or [])
            mentioned |= set(rows[0]["es"] or [])
    return out, mentioned


def _prune_sources(conn: Connection, relations: list[dict[str, Any]]) -> None:
    """Keep the passages that still exist; an extracted relation citing none goes, one an agent
    wrote or gave properties stays. Only passages that still do not exist are dropped (a writer
    may have created one since)."""
    rows = [{"s": r["s"], "d": r["d"], "id": r["id"]} for r in relations]
    conn.write_many(
        """UNWIND $rows AS r MATCH (:Entity {id: r.s})-[x:RELATES]->(:Entity {id: r.d}) WHERE x.id = r.id
           WITH x, [c IN x.source_chunks WHERE c IS NOT NULL] AS src
           UNWIND (CASE WHEN size(src) = 0 THEN [NULL] ELSE src END) AS cid
           OPTIONAL MATCH (c:Chunk {id: cid})
           WITH x, collect(c.id) AS kept
           SET x.source_chunks = kept""",
        rows,
    )
    conn.write_many(  # a second query: FalkorDB dropped the SET above when a DELETE followed it
        f"""UNWIND $rows AS r MATCH (:Entity {{id: r.s}})-[x:RELATES]->(:Entity {{id: r.d}})
           WHERE x.id = r.id AND size(coalesce(x.source_chunks, [])) = 0 AND x._source = $src
                 AND {holds_no_properties("x")}
           DELETE x""",
        rows,
        src=EXTRACTION_SOURCE,
    )
