"""Writing and removing document versions in the embedded graph, in batched statements.

Every function runs inside the caller's write transaction, so a batch of documents replaces
their old versions in one step. Rows go to the engine as UNWIND lists (one round trip per
statement, not per row). Three engine behaviours shape the statements:

- a node pattern keyed on a struct field (`{id: r.id}`) is planned as a cross product with the
  whole table, so every statement first projects the fields to plain variables (`WITH r.id AS
  id`), which the engine joins by hash; a second node is matched after another `WITH`;
- MERGE mis-merges duplicate keys within one UNWIND (and crashes on a table with a full-text
  index, as the code tables have), so rows are folded by key in Python and written as lookup +
  CREATE/SET;
- strings copied straight from a parameter into a full-text-indexed column are not indexed,
  hence `concat(x, '')` on the code tables' indexed columns (`code.py`). Passages and entities
  have no engine index: `bm25` searches them in process.

Relations are found by both ends and their id. Finding them from the source alone
(`MATCH (:Entity {id: s})-[x:RELATES]->() WITH * WHERE x.id = rid`) halved a look-up of 1,000
random relations (70.5 -> 34.8 ms among 130,000), but its join yields every edge of the source
for every row naming it, so a batch of updates around a hub entity grows as the square of its
degree. It was tried once in a 100,000-passage ingest, beside a larger checkpoint threshold that
alone ran the buffer pool out (see `engine.MIN_BUFFER_POOL_MB`), so it was never measured at scale
on its own.

The engine's bulk path, `COPY table FROM (UNWIND $rows ...)`, is allowed inside a transaction
and resolves relationship ends through the primary-key index, but it is not crash-safe: with
passages and entities written by COPY, 3 of 40 killed ingests in bench/crash.py came back, after
WAL replay, with documents whose passages were gone (replay dropped the copied rows); with COPY
for relationships only, 2 of 40 lost every relation and mention of the batch. The statements here
create rows with CREATE, which replays correctly (0 of 40).

Three more make deletes careful (Kuzu 0.11.3, each measured; see `delete_orphans` and
`delete_chunks`): existence subqueries and OPTIONAL MATCH miss relationships created earlier in
the same transaction on a reopened database, so no delete here is decided by `NOT EXISTS`;
`DETACH DELETE` leaves, after a crash and WAL replay, the node's relationships in the table; and
`DETACH DELETE` of a node whose relationships the same transaction already deleted removes,
on replay, another node's relationship. So every relationship is deleted by its own statement,
then its nodes by a plain `DELETE`, which also refuses (and rolls back) if one was missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation
from evigraph.property_types import holds_no_properties, holds_properties
from evigraph.store.core.schema_names import EXTRACTION_SOURCE, VERSION_SEQ
from evigraph.store.core.version_rows import Folded, add_entity, add_relation, version_rows
from evigraph.store.embedded.executor import Tx, value_batches, vector_texts
from evigraph.store.embedded.packed import pack, unpack_ids
from evigraph.store.search_text import entity_search_text

EDGE_BATCH = 50_000
"""Rows per statement for the small rows (relations, mentions, links; no vectors). Each statement
joins its rows to whole tables, a cost paid per statement: among 1,300,000 relations and 500,000
entities, looking up 300, 5,000 and 50,000 relations took 2.4, 3.3 and 9.3 s (cores shared with
other work). A 100,000-passage ingest writes ~100,000 relation rows a group, so 5,000-row
statements paid that scan twenty times."""


def current_versions(tx: Tx, keys: Sequence[str]) -> dict[str, int]:
    rows = tx.rows(
        "UNWIND $keys AS k MATCH (d:Document {key: k}) RETURN d.key AS key, d.version AS version",
        {"keys": list(keys)},
    )
    return {r["key"]: int(r["version"]) for r in rows}


def allocate(tx: Tx, previous: Mapping[str, int], keys: Sequence[str]) -> dict[str, int]:
    """Each key's next version number: one past the highest it was ever given (`VERSION_SEQ`),
    which a delete does not lower, recorded in the caller's transaction. A write that rolls back
    (or a process killed before its commit) takes its numbers with it, and nothing outside the
    transaction saw them, so none is given again once anything can name it. The two statements
    cost 3.9 ms (median) of a 64-document batch's 66 ms among 10,000 keys (one-passage documents)."""
    marks = {
        r["key"]: int(r["n"] or 0)
        for r in tx.rows(
            f"UNWIND $keys AS k MATCH (s:{VERSION_SEQ} {{key: k}}) RETURN s.key AS key, s.n AS n",
            {"keys": list(keys)},
        )
    }
    numbers = {k: max(marks.get(k, 0), previous.get(k, 0)) + 1 for k in keys}
    keep_marks(tx, numbers)
    return numbers


def keep_marks(tx: Tx, numbers: Mapping[str, int]) -> None:
    """Raise each key's highest version given (`VERSION_SEQ`) to at least `numbers[key]`."""
    tx.run_batched(
        f"""UNWIND $rows AS r WITH r.key AS key, r.n AS n
            MERGE (s:{VERSION_SEQ} {{key: key}})
            SET s.n = CASE WHEN s.n IS NULL OR s.n < n THEN n ELSE s.n END""",
        [{"key": k, "n": n} for k, n in numbers.items()],
    )


def remove_contents(tx: Tx, keys: Sequence[str]) -> set[str]:
    """Remove the chunks of documents and what hangs off them; return entities that may be orphaned.

    Relations lose these chunks as sources, and extracted ones go when none remain (one an agent
    recorded, or gave properties, stands on the agent's word, as it did before any passage stated
    it). The orphan check itself waits until the new version is written, which may mention the
    same entities again.
    """
    if not keys:
        return set()
    old_chunks = tx.column(
        "UNWIND $keys AS k MATCH (:Document {key: k})<-[:PART_OF]-(c:Chunk) RETURN c.id",
        {"keys": list(keys)},
    )
    if not old_chunks:
        return set()
    candidates = set(
        tx.column(
            "UNWIND $ids AS cid MATCH (e:Entity)-[:MENTIONED_IN]->(:Chunk {id: cid}) RETURN DISTINCT e.id",
            {"ids": old_chunks},
        )
    )
    if candidates:
        prune_relation_sources(tx, candidates, set(old_chunks))
    delete_chunks(tx, old_chunks)
    return candidates


def delete_chunks(tx: Tx, chunk_ids: Sequence[str]) -> None:
    """Delete chunks: their relationships first, each by its own statement, then the nodes.

    A `DETACH DELETE` alone, committed just before a SIGKILL, left after WAL replay the chunk's
    MENTIONED_IN edges in the relationship table (70 ghost edges for 10 deleted one-passage
    documents; a raw count sees them, a pattern reading the deleted node does not), where a
    chunk reusing the slot would inherit them. Explicit deletes followed by `DETACH DELETE`
    of the document were worse: the replay removed the PART_OF edge of another document's
    chunk (2 of 14 killed deletes in bench/crash.py; reproduced on a bare two-table graph).
    Explicit deletes followed by plain `DELETE`s replay correctly.
    """
    ids = list(chunk_ids)
    tx.run_batched("UNWIND $rows AS cid MATCH (:Entity)-[m:MENTIONED_IN]->(:Chunk {id: cid}) DELETE m", ids)
    tx.run_batched("UNWIND $rows AS cid MATCH (:Chunk {id: cid})-[m:MENTIONS]->() DELETE m", ids)
    tx.run_batched("UNWIND $rows AS cid MATCH (:Chunk {id: cid})-[n:NEXT]->(:Chunk) DELETE n", ids)
    tx.run_batched("UNWIND $rows AS cid MATCH (:Chunk)-[n:NEXT]->(:Chunk {id: cid}) DELETE n", ids)
    tx.run_batched("UNWIND $rows AS cid MATCH (:Chunk {id: cid})-[p:PART_OF]->(:Document) DELETE p", ids)
    tx.run_batched("UNWIND $rows AS cid MATCH (c:Chunk {id: cid}) DELETE c", ids)


def delete_entities(tx: Tx, entity_ids: Sequence[str]) -> None:
    """Delete entities, their relations and mentions first (see `delete_chunks` for why)."""
    ids = list(entity_ids)
    tx.run_batched("UNWIND $rows AS eid MATCH (:Entity {id: eid})-[r:RELATES]->(:Entity) DELETE r", ids)
    tx.run_batched("UNWIND $rows AS eid MATCH (:Entity)-[r:RELATES]->(:Entity {id: eid}) DELETE r", ids)
    tx.run_batched("UNWIND $rows AS eid MATCH (:Entity {id: eid})-[m:MENTIONED_IN]->(:Chunk) DELETE m", ids)
    tx.run_batched("UNWIND $rows AS eid MATCH (e:Entity {id: eid}) DELETE e", ids)


def prune_relation_sources(tx: Tx, entity_ids: set[str], gone: set[str], *, extracted_only: bool = False) -> None:
    """Take the passages `gone` out of the sources of the relations of `entity_ids`, and delete the
    extracted relations left with none. `extracted_only`: the passages stay (their graph is
    replaced), so only extracted relations lose them; one an agent recorded keeps its evidence."""
    ids = {"ids": sorted(entity_ids)}
    rels = tx.rows(
        """UNWIND $ids AS eid MATCH (a:Entity {id: eid})-[r:RELATES]->(b:Entity)
           RETURN r.id AS id, a.id AS s, b.id AS d, r.source_chunks AS src, r._source AS source,
                  r._property_sources AS props""",
        ids,
    ) + tx.rows(
        """UNWIND $ids AS eid MATCH (a:Entity)-[r:RELATES]->(b:Entity {id: eid})
           RETURN r.id AS id, a.id AS s, b.id AS d, r.source_chunks AS src, r._source AS source,
                  r._property_sources AS props""",
        ids,
    )
    update: list[dict[str, Any]] = []
    drop: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in rels:
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        agents = r["source"] not in (None, EXTRACTION_SOURCE)
        if agents and extracted_only:
            continue
        src = unpack_ids(r["src"])
        kept = [c for c in src if c not in gone]
        if len(kept) == len(src):
            continue
        row = {"id": r["id"], "s": r["s"], "d": r["d"], "src": pack(kept)}
        agents = agents or holds_properties(r["props"])
        (update if kept or agents else drop).append(row)
    tx.run_batched(
        """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid, r.src AS src
           MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
           SET x.source_chunks = src""",
        update,
    )
    tx.run_batched(
        """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid
           MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid DELETE x""",
        drop,
    )


def delete_orphans(tx: Tx, candidates: Iterable[str]) -> list[str]:
    """Delete extracted entities that no chunk mentions any more (agent-written ones stay, and so
    do those an agent gave properties: the values stand on the agent's word, not on a passage).

    Which candidates are still mentioned is read with a plain MATCH and decided in Python. In
    Kuzu 0.11.3, `NOT EXISTS { MATCH (e)-[:MENTIONED_IN]->(:Chunk) }` (and an OPTIONAL MATCH
    count) run in the transaction that has just written the new version's mentions, on a
    database reopened since its first ingest, called 219 of 261 candidates unmentioned while
    a plain MATCH found all 261 mentioned: re-ingesting 20 of 60 changed files kept 369
    entities where a fresh ingest has 588.
    """
    ids = sorted(set(candidates))
    if not ids:
        return []
    mentioned = set(
        tx.column(
            "UNWIND $ids AS eid MATCH (e:Entity {id: eid})-[:MENTIONED_IN]->(:Chunk) RETURN DISTINCT e.id",
            {"ids": ids},
        )
    )
    unmentioned = [i for i in ids if i not in mentioned]
    if not unmentioned:
        return []
    extracted = tx.column(
        f"""UNWIND $ids AS eid MATCH (e:Entity {{id: eid}})
           WHERE e._source = $src AND {holds_no_properties("e")} RETURN e.id""",
        {"ids": unmentioned, "src": EXTRACTION_SOURCE},
    )
    delete_entities(tx, extracted)
    return sorted(extracted)


def write_versions(tx: Tx, versions: Sequence[DocumentVersion]) -> dict[str, int]:
    """Replace each document's current version with the given one; return the new version numbers."""
    keys = [v.key for v in versions]
    if len(set(keys)) != len(keys):
        raise ValueError("a batch must not hold two versions of one document")
    previous = current_versions(tx, keys)
    candidates = remove_contents(tx, [k for k in keys if k in previous])
    now = datetime.now(UTC).replace(tzinfo=None)
    numbers = allocate(tx, previous, keys)
    rows = version_rows(versions, numbers, now)
    docs, chunks, nexts = rows.docs, rows.chunks, rows.nexts
    entities, mentions, relations = rows.entities, rows.mentions, rows.relations

    tx.run_batched(
        """UNWIND $rows AS r
           WITH r.key AS key, r.title AS title, r.path AS path, r.hash AS hash, r.version AS version,
                r.loader AS loader, r.metadata AS metadata, r.chunks AS chunks, r.at AS at
           MERGE (d:Document {key: key})
           SET d.title = title, d.path = CAST(path AS STRING), d.content_hash = hash, d.version = version,
               d.loader = loader, d.metadata = metadata, d.chunk_count = chunks, d.ingested_at = at""",
        docs,
    )
    _create_chunks(tx, chunks)
    tx.run_batched(
        """UNWIND $rows AS r WITH r.a AS a_id, r.b AS b_id
           MATCH (a:Chunk {id: a_id}) WITH a, b_id MATCH (b:Chunk {id: b_id}) CREATE (a)-[:NEXT]->(b)""",
        nexts,
        EDGE_BATCH,
    )
    created = write_entities(tx, entities, now)
    create_mentions(tx, mentions)
    write_relations(tx, relations, new_entities=created, fresh_sources=True)
    delete_orphans(tx, candidates)
    return numbers


def create_mentions(tx: Tx, mentions: Sequence[dict[str, Any]]) -> None:
    """Mention rows (`version_rows`) as `MENTIONED_IN` edges."""
    tx.run_batched(
        """UNWIND $rows AS r WITH r.e AS e_id, r.c AS c_id, r.s AS span_s, r.t AS span_e
           MATCH (e:Entity {id: e_id}) WITH e, c_id, span_s, span_e MATCH (c:Chunk {id: c_id})
           CREATE (e)-[:MENTIONED_IN {span_starts: span_s, span_ends: span_e}]->(c)""",
        [{**m, "s": pack(m["s"]), "t": pack(m["t"])} for m in mentions],
        EDGE_BATCH,
    )


_CREATE_CHUNKS = """UNWIND $rows AS r
           WITH r.i AS i, r.doc AS doc, r.id AS id, r.version AS version, r.`index` AS idx, r.text AS text,
                r.bc AS bc, r.page AS page, r.cs AS cs, r.ce AS ce, r.emb AS emb, r.st AS st,
                r.ss AS ss, r.se AS se, r.cx AS cx, r.fd AS fd
           MATCH (d:Document {key: doc})
           CREATE (c:Chunk {id: id, document: doc, version: version, `index`: idx, text: text,
                            breadcrumbs: CAST(bc AS STRING[]), page: CAST(page AS INT64),
                            char_start: cs, char_end: ce, embedding: CAST(emb AS FLOAT[]),
                            search_text: st, sentence_starts: CAST(ss AS INT64[]),
                            sentence_ends: CAST(se AS INT64[]),
                            sentence_vectors: CASE WHEN $svm[i] THEN CAST($sv[i] AS FLOAT[][]) ELSE NULL END,
                            passage_context: CAST(cx AS STRING), found_hits: CAST(fd AS STRING)})-[:PART_OF]->(d)"""


def _create_chunks(tx: Tx, chunks: Sequence[dict[str, Any]]) -> None:
    """Create the passages, their vectors passed the way the engine takes fastest.

    Kuzu 0.11.3 converts a list inside a row parameter a float at a time: 1,000 passages with
    1-8 sentence vectors each (1.7M floats) took 10.1 s as rows, 2.2 s with the sentence vectors
    as a parameter of their own indexed by row (as `table_copy` copies every column); text
    (`vector_texts`, quicker still) cannot carry them, their counts differ. That parameter reads
    a NULL list as empty, so a mask beside it marks the passages without them, and one typed
    value past the last row types a list of empty ones.
    """
    rows = [{**c, "emb": e} for c, e in zip(chunks, vector_texts([c["emb"] for c in chunks]), strict=True)]
    for part in value_batches(rows):
        vectors = [r.pop("sv") for r in part]  # row i's are the i-th of `sv` (the engine counts from 1)
        params = {
            "rows": [{**r, "i": i} for i, r in enumerate(part, 1)],
            "sv": [v if v is not None else [] for v in vectors] + [[[0.0]]],
            "svm": [v is not None for v in vectors] + [False],
        }
        tx.execute(_CREATE_CHUNKS, params).close()


def write_entities(
    tx: Tx, entities: dict[str, dict[str, Any]], now: datetime, source: str = EXTRACTION_SOURCE
) -> set[str]:
    """Create new entities and fold descriptions and aliases into existing ones; return the ids
    it created.

    An update sets the full-text column again when its name forms or descriptions grew, so
    search finds an entity by an alias learnt later, as on FalkorDB. (While the table had a
    full-text index in the engine, 0.11.3 crashed on that update, seen on the hotpotqa corpus,
    and on a MERGE into the table; `bm25` searches in process now, and a writable open drops the
    old index.)
    """
    if not entities:
        return set()
    existing = {
        r["id"]: r
        for r in tx.rows(
            """UNWIND $ids AS eid MATCH (e:Entity {id: eid})
               RETURN e.id AS id, e.name AS name, e.descriptions AS descs, e.aliases AS aliases""",
            {"ids": list(entities)},
        )
    }
    created, updated = [], []
    for eid, row in entities.items():
        old = existing.get(eid)
        if old is None:
            created.append(
                {
                    **row,
                    "dtext": " | ".join(row["descs"]),
                    "at": now,
                    "st": entity_search_text(row["name"], row["aliases"], row["descs"]),
                }
            )
            continue
        descs = list(dict.fromkeys([*(old["descs"] or []), *row["descs"]]))
        aliases = list(dict.fromkeys([*(old["aliases"] or []), *row["aliases"]]))
        if descs != list(old["descs"] or []) or aliases != list(old["aliases"] or []):
            st = entity_search_text(old["name"], aliases, descs)
            updated.append({"id": eid, "descs": descs, "aliases": aliases, "dtext": " | ".join(descs), "st": st})
    # A name's vector goes in with the entity, as text (`vector_texts`): set afterwards, each of
    # 9,856 entities' vectors (2wikimultihopqa) took 0.9 ms in statements of 260, 8.8 s of a 56 s ingest.
    with_vector = [r for r in created if r.get("v")]
    with_vector = [{**r, "v": v} for r, v in zip(with_vector, vector_texts([r["v"] for r in with_vector]), strict=True)]
    without = [{k: x for k, x in r.items() if k != "v"} for r in created if not r.get("v")]
    for vectors, rows in ((True, with_vector), (False, without)):
        vector = ", embedding: CAST(r.v AS FLOAT[])" if vectors else ""
        tx.run_batched(
            f"""UNWIND $rows AS r CREATE (e:Entity {{id: r.id, name: r.name, label: r.label,
                   description: r.dtext, descriptions: CAST(r.descs AS STRING[]),
                   aliases: CAST(r.aliases AS STRING[]), _source: $source, _created_at: r.at,
                   search_text: r.st{vector}}})""",
            rows,
            extra={"source": source},
        )
    tx.run_batched(
        """UNWIND $rows AS r WITH r.id AS id, r.dtext AS dtext, r.descs AS descs, r.aliases AS aliases, r.st AS st
           MATCH (e:Entity {id: id})
           SET e.description = dtext, e.descriptions = CAST(descs AS STRING[]),
               e.aliases = CAST(aliases AS STRING[]), e.search_text = st""",
        updated,
    )
    return {row["id"] for row in created}


def write_relations(
    tx: Tx,
    relations: dict[str, dict[str, Any]],
    source: str = EXTRACTION_SOURCE,
    new_entities: set[str] | frozenset[str] = frozenset(),
    *,
    fresh_sources: bool = False,
) -> int:
    """Create new relations and add this batch's passages as sources of existing ones; returns
    how many existed already.

    A relation with an endpoint in `new_entities` (created by this write) cannot exist yet, so it
    is not looked up: in a large ingest most relations touch a new entity, and each look-up
    statement joins the whole relation table.

    `fresh_sources` says no source given can be listed already: the passages of a version just
    numbered (a version number is never reused while its passages are listed). Then an existing
    relation's new sources are appended in the engine, where otherwise its whole list is read,
    merged here and written back (at 100,000 passages a relation has 14 sources on average, and
    reading and rewriting them was the ingest's largest statement).
    """
    if not relations:
        return 0
    maybe = [r for r in relations.values() if r["s"] not in new_entities and r["d"] not in new_entities]
    if fresh_sources:
        known = _append_sources(tx, maybe) if maybe else set()
        created = [row for rid, row in relations.items() if rid not in known]
        existed = len(known)
    else:
        created, updated = _fold_sources(tx, relations, maybe)
        tx.run_batched(
            """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid, r.src AS src, r.conf AS conf
               MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
               SET x.source_chunks = src, x.confidence = conf""",
            updated,
            EDGE_BATCH,
        )
        existed = len(updated)
    tx.run_batched(
        """UNWIND $rows AS r
           WITH r.s AS s, r.d AS d, r.id AS rid, r.type AS type, r.fact AS fact, r.conf AS conf, r.src AS src
           MATCH (a:Entity {id: s}) WITH a, d, rid, type, fact, conf, src MATCH (b:Entity {id: d})
           CREATE (a)-[:RELATES {id: rid, type: type, fact: fact, confidence: conf,
                                  source_chunks: src, _source: $source}]->(b)""",
        [{**row, "src": pack(row["src"])} for row in created],
        EDGE_BATCH,
        extra={"source": source},
    )
    return existed


def _append_sources(tx: Tx, rows: Sequence[dict[str, Any]]) -> set[str]:
    """Append each row's sources to its relation where that exists; returns the ids found.

    In statements bounded by values (`value_batches`: about 10,000 of these rows), as
    `Tx.run_batched` bounds every other one; this one reads its result, so it slices for itself,
    and it had sliced by `EDGE_BATCH` rows alone. Among 20,000 generated passages one 50,000-row
    statement then raised the ingest's memory by 344 MB and the ingest peaked at 1,846 MB; in
    statements of 10,000 rows the largest step was 78 MB and the peak 1,514 MB (0.82x), the
    statements taking 11.1 s against 10.4 s. At 100,000 passages (`bench/scale.py`, one session)
    the ingest peaked at 2,726 MB against 2,942 MB (0.93x) at 295 against 288 passages/s. It is
    still the ingest's largest statement there (183 of them, 108 s of a 434 s ingest with a 1 GB
    page cache), though finding its relations is not what costs: on the finished file a read-only
    query found 10,000 random relations, or 4,306 of hub entities, among 178,666 in 0.15-0.3 s.

    The engine plans every form of this match as a scan of the whole relation table joined by
    hash (the end entities' key lookups do not narrow it), so a relation is found by its id alone
    (a hash of its ends, type and fact, unique by construction): rows of half the values, so half
    the statements. Setting the confidence cost as much as appending the sources (12,000 rows
    among 224,842 relations: 0.32 s to find, +0.34 s to append, +0.35 s to set the confidence), and
    a restated relation nearly always comes with the confidence it has, so the statement reads
    the stored confidence back and a second one raises it only where a new source gives more.
    """
    packed = [{"id": r["id"], "src": pack(r["src"])} for r in rows]
    confidence = {r["id"]: r["conf"] for r in rows}
    found: set[str] = set()
    raised: list[dict[str, Any]] = []
    for part in value_batches(packed, EDGE_BATCH):
        for hit in tx.rows(
            """UNWIND $rows AS r WITH r.id AS rid, r.src AS src
               MATCH ()-[x:RELATES]->() WHERE x.id = rid
               SET x.source_chunks = CASE WHEN x.source_chunks IS NULL OR x.source_chunks = ''
                                          THEN CAST(src AS STRING)
                                          ELSE x.source_chunks + ' ' + CAST(src AS STRING) END
               RETURN x.id AS id, x.confidence AS conf""",
            {"rows": part},
        ):
            found.add(hit["id"])
            if hit["conf"] is None or confidence[hit["id"]] > hit["conf"]:
                raised.append({"id": hit["id"], "conf": confidence[hit["id"]]})
    tx.run_batched(
        """UNWIND $rows AS r WITH r.id AS rid, r.conf AS conf
           MATCH ()-[x:RELATES]->() WHERE x.id = rid SET x.confidence = conf""",
        raised,
        EDGE_BATCH,
    )
    return found


def _fold_sources(
    tx: Tx, relations: dict[str, dict[str, Any]], maybe: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The relations to create, and the existing ones with their sources merged (read, folded
    here, to be written back whole): for sources that may be listed already."""
    found = (
        tx.rows(
            """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid
               MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
               RETURN x.id AS id, x.source_chunks AS src, x.confidence AS conf""",
            {"rows": [{"s": r["s"], "d": r["d"], "id": r["id"]} for r in maybe]},
        )
        if maybe
        else []
    )
    existing = {r["id"]: r for r in found}
    created, updated = [], []
    for rid, row in relations.items():
        old = existing.get(rid)
        if old is None:
            created.append(row)
        else:
            src = list(dict.fromkeys([*unpack_ids(old["src"]), *row["src"]]))
            updated.append({**row, "src": pack(src), "conf": max(float(old["conf"] or 0.0), row["conf"])})
    return created, updated


def delete_document(tx: Tx, key: str) -> bool:
    """Remove a document; its highest version number stays (`VERSION_SEQ`), so an ingest of the
    key after the delete numbers past the version removed."""
    current = current_versions(tx, [key])
    if not current:
        return False
    keep_marks(tx, current)
    candidates = remove_contents(tx, [key])
    # remove_contents deleted its PART_OF edges; a plain DELETE (see delete_chunks) does the rest.
    tx.execute("MATCH (d:Document {key: $key}) DELETE d", {"key": key}).close()
    delete_orphans(tx, candidates)
    return True


def upsert_entities(tx: Tx, entities: Sequence[ExtractedEntity], source: str) -> None:
    """Entities an agent records: created with its `_source`, or merged into an existing entity."""
    rows = Folded()
    for e in entities:
        add_entity(rows, e)
    write_entities(tx, rows, datetime.now(UTC).replace(tzinfo=None), source)


def upsert_relations(tx: Tx, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]], source: str) -> None:
    """Relations an agent records, each with the passages (chunk ids) that support it, possibly none."""
    rows = Folded()
    for rel, chunks in relations:
        add_relation(rows, rel, chunks)
    write_relations(tx, rows, source)
