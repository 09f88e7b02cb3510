"""Merging entities on FalkorDB, and re-pointing later writes at the survivors.

The embedded store (`store/embedded/merging.py`) merges in one transaction; the server has none
spanning queries, so a merge here is a sequence of queries ordered so that stopping after any
one of them loses nothing and running the merge again finishes it:

1. Everything the merged-away entities hold is read, and the writes are worked out in Python
   (the same plan as the embedded store's).
2. The redirects are recorded first (`EntityRedirect`, kept flat): from then on every write
   naming a merged-away id (`redirect_versions`, `redirect_entities`, `redirect_relations`)
   lands on the survivor.
3. The survivors get the names, aliases and descriptions, mentions and relations of what they
   absorb. Every write here merges or sets to a union, so repeating it changes nothing.
4. The merged-away entities are deleted with their edges, last.

A merge stopped between 2 and 4 leaves a merged-away entity beside its redirect; `check` reports
it (`unfinished_merges`) and `check(repair=True)` runs the merge again. Merges span queries, so
the maintenance mixin runs them under a lock the server holds (`ServerLock`): two processes
never merge at once. A document write running meanwhile in another process that read the
redirects before step 2 may still write a mention of a merged-away id after step 4 (which then
re-creates that entity): the same duplicate the next resolution at finalize merges again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evigraph.graphdata import redirect_graph, union
from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, GraphData
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.documents import write_entities, write_relations
from evigraph.store.merging import EntityMerge, EntityRecord, MergeOutcome
from evigraph.store.schema_names import ENTITY_REDIRECT, EXTRACTION_SOURCE

_BATCH = 2000


# -- reads -------------------------------------------------------------------------------------


def entity_records(conn: Connection) -> list[EntityRecord]:
    """Every entity with its names, label and the passages mentioning it (only switched-in passages
    are ever mentioned: a version's mentions are written by its switch, `documents.py`)."""
    counts = {
        r["id"]: int(r["n"])
        for r in conn.read_sync("MATCH (e:Entity)-[:MENTIONED_IN]->(:Chunk) RETURN e.id AS id, count(*) AS n")
    }
    rows = conn.read_sync(
        """MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.label AS label, e.aliases AS aliases,
               e.descriptions AS descs"""
    )
    return [
        EntityRecord(
            id=r["id"],
            name=r["name"] or "",
            label=r["label"] or "",
            aliases=tuple(r["aliases"] or ()),
            descriptions=tuple(r["descs"] or ()),
            mentions=counts.get(r["id"], 0),
        )
        for r in sorted(rows, key=lambda r: str(r["id"]))
    ]


def redirects(conn: Connection, ids: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
    """Merged-away id -> (survivor id, survivor name), for `ids` (every one recorded when None).

    Read from the primary: a redirect just recorded must steer the write that follows it, and a
    replica may lag behind.
    """
    if ids is None:
        rows = _primary_rows(conn, f"MATCH (r:{ENTITY_REDIRECT}) RETURN r.id AS id, r.survivor AS s, r.name AS n")
    else:
        wanted = sorted(set(ids))
        rows = []
        for i in range(0, len(wanted), _BATCH):
            rows += _primary_rows(
                conn,
                f"""UNWIND $ids AS k MATCH (r:{ENTITY_REDIRECT} {{id: k}})
                    RETURN r.id AS id, r.survivor AS s, r.name AS n""",
                {"ids": wanted[i : i + _BATCH]},
            )
    return {r["id"]: (r["s"], r["n"] or "") for r in rows}


def _primary_rows(conn: Connection, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A read on the primary, or through the read path when the connection is read-only (nothing
    it writes could need the latest redirect then)."""
    return conn.read_sync(query, params) if conn.read_only else conn.read_primary_sync(query, params)


# -- re-pointing writes ------------------------------------------------------------------------


def redirect_versions(conn: Connection, versions: Sequence[DocumentVersion]) -> list[DocumentVersion]:
    """The versions with every merged-away entity id re-pointed at its survivor."""
    ids = {e.id for v in versions for e in v.graph.entities}
    found = redirects(conn, ids) if ids else {}
    if not found:
        return list(versions)
    return [v.model_copy(update={"graph": redirect_graph(v.graph, found)}) for v in versions]


def redirect_entities(conn: Connection, entities: Sequence[ExtractedEntity]) -> list[ExtractedEntity]:
    """Entities an agent records, merged-away ids re-pointed at their survivors."""
    found = redirects(conn, {e.id for e in entities}) if entities else {}
    if not found:
        return list(entities)
    return list(redirect_graph(GraphData(entities=tuple(entities)), found).entities)


def redirect_relations(
    conn: Connection, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]]
) -> list[tuple[ExtractedRelation, Sequence[str]]]:
    """Relations an agent records, ends that were merged away re-pointed at their survivors."""
    found = redirects(conn, {i for r, _ in relations for i in (r.source, r.target)}) if relations else {}
    if not found:
        return list(relations)

    def to(eid: str) -> str:
        return found[eid][0] if eid in found else eid

    return [(r.model_copy(update={"source": to(r.source), "target": to(r.target)}), c) for r, c in relations]


# -- merging -----------------------------------------------------------------------------------


@dataclass
class _Plan:
    """A batch's writes, worked out in Python from what was read."""

    to: dict[str, str]
    entity_updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    mentions: list[dict[str, Any]] = field(default_factory=list)
    relation_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    folded_mentions: int = 0
    moved_relations: int = 0
    folded_relations: int = 0


def merge_entities(
    conn: Connection, merges: Sequence[EntityMerge], renew: Callable[[], None] = lambda: None
) -> MergeOutcome:
    """Fold each merge's entities into its survivor; see the module docstring for the order.

    The caller holds the merge lock (`ServerLock`), so no other merge runs meanwhile; `renew`
    extends it between steps.
    """
    wanted = {i for m in merges for i in (m.survivor, *m.merged)}
    rows = {r["id"]: r for r in _entity_rows(conn, wanted)}
    to: dict[str, str] = {}
    skipped: list[str] = []
    for m in merges:
        ids = (m.survivor, *m.merged)
        if not m.merged or any(i not in rows for i in ids) or any(i in to or i in to.values() for i in ids):
            skipped.append(m.survivor)  # gone, or named twice in one batch: the next finalize sees it again
            continue
        to.update(dict.fromkeys((x for x in m.merged if x != m.survivor), m.survivor))
    if not to:
        return MergeOutcome(skipped=tuple(skipped))
    plan = _Plan(to)
    _plan_entities(plan, rows)
    moved_mentions = _plan_mentions(conn, plan)
    _plan_relations(conn, plan)
    existed = _existing_relations(conn, plan)
    plan.moved_relations -= existed
    plan.folded_relations += existed
    renew()
    _record_redirects(conn, to, {s: rows[s]["name"] for s in set(to.values())})
    _write(conn, plan)
    renew()
    gone = sorted(to)
    delete_entities(conn, gone)
    return MergeOutcome(
        merged=len(gone),
        mentions_moved=moved_mentions,
        mentions_folded=plan.folded_mentions,
        relations_moved=plan.moved_relations,
        relations_folded=plan.folded_relations,
        skipped=tuple(skipped),
    )


def unfinished_merges(conn: Connection) -> dict[str, str]:
    """Merged-away id -> survivor, for redirects whose merged-away entity still exists: a merge
    stopped before its last step (or an entity re-created by a write that raced the merge)."""
    rows = conn.read_sync(
        f"""MATCH (r:{ENTITY_REDIRECT}) WITH r MATCH (e:Entity {{id: r.id}})
            RETURN r.id AS id, r.survivor AS s"""
    )
    return {r["id"]: r["s"] for r in rows}


def _entity_rows(conn: Connection, ids: Iterable[str]) -> list[dict[str, Any]]:
    return conn.read_primary_sync(  # on the primary: the plan must see the latest state
        """UNWIND $ids AS eid MATCH (e:Entity {id: eid})
           RETURN e.id AS id, e.name AS name, e.label AS label, e.aliases AS aliases, e.descriptions AS descs""",
        {"ids": sorted(ids)},
    )


def _plan_entities(plan: _Plan, rows: dict[str, dict[str, Any]]) -> None:
    """Survivors keep every name, alias and description of what they absorb (`write_entities`
    unites these with their own)."""
    for old, survivor in sorted(plan.to.items()):
        row = plan.entity_updates.setdefault(
            survivor,
            {
                "id": survivor,
                "name": rows[survivor]["name"],
                "label": rows[survivor]["label"],
                "descs": [],
                "aliases": [],
            },
        )
        row["aliases"] = list(union(tuple(row["aliases"]), (rows[old]["name"] or "", *(rows[old]["aliases"] or ()))))
        row["descs"] = list(union(tuple(row["descs"]), tuple(rows[old]["descs"] or ())))


def _plan_mentions(conn: Connection, plan: _Plan) -> int:
    """A survivor already naming a passage gets the spans added to its mention; else a new one."""
    query = """UNWIND $ids AS eid MATCH (e:Entity {id: eid})-[m:MENTIONED_IN]->(c:Chunk)
               RETURN e.id AS e, c.id AS c, m.span_starts AS s, m.span_ends AS t"""
    spans: dict[tuple[str, str], set[tuple[int, int]]] = {}
    had: set[tuple[str, str]] = set()
    for r in conn.read_primary_sync(query, {"ids": sorted(set(plan.to.values()))}):
        key = (r["e"], r["c"])
        had.add(key)
        spans.setdefault(key, set()).update(zip(r["s"] or (), r["t"] or (), strict=False))
    touched: set[tuple[str, str]] = set()
    moved = 0
    for r in conn.read_primary_sync(query, {"ids": sorted(plan.to)}):
        key = (plan.to[r["e"]], r["c"])
        if key in had or key in touched:
            plan.folded_mentions += 1
        else:
            moved += 1
        touched.add(key)
        spans.setdefault(key, set()).update(zip(r["s"] or (), r["t"] or (), strict=False))
    for key in sorted(touched):
        ordered = sorted(spans[key])
        plan.mentions.append({"e": key[0], "c": key[1], "s": [a for a, _ in ordered], "t": [b for _, b in ordered]})
    return moved


def _plan_relations(conn: Connection, plan: _Plan) -> None:
    """Relations get the ids their new ends give them; one that lands on an existing relation
    adds its passages to it, one that would join a survivor to itself goes."""
    fields = """RETURN x.id AS id, a.id AS s, b.id AS d, x.type AS type, x.fact AS fact, x.confidence AS conf,
                      x.source_chunks AS src, x._source AS origin"""
    ids = {"ids": sorted(plan.to)}
    found = conn.read_primary_sync(
        f"UNWIND $ids AS eid MATCH (a:Entity {{id: eid}})-[x:RELATES]->(b:Entity) {fields}", ids
    )
    found += conn.read_primary_sync(
        f"UNWIND $ids AS eid MATCH (a:Entity)-[x:RELATES]->(b:Entity {{id: eid}}) {fields}", ids
    )
    seen: set[tuple[str, str, str]] = set()
    new: dict[str, dict[str, Any]] = {}
    for r in found:
        if (r["id"], r["s"], r["d"]) in seen:
            continue  # between two merged-away entities: read from both ends
        seen.add((r["id"], r["s"], r["d"]))
        s: str = plan.to.get(r["s"]) or r["s"]
        d: str = plan.to.get(r["d"]) or r["d"]
        if s == d:
            plan.folded_relations += 1
            continue
        rid = _relation_id(s, d, r["type"], r["fact"])
        row = new.get(rid)
        if row is None:
            src = list(r["src"] or [])
            new[rid] = {"id": rid, "s": s, "d": d, "type": r["type"], "fact": r["fact"], "src": src}
            new[rid].update(conf=float(r["conf"] or 0.0), origin=r["origin"])
            plan.moved_relations += 1
        else:
            row["src"] = list(dict.fromkeys([*row["src"], *(r["src"] or [])]))
            row["conf"] = max(row["conf"], float(r["conf"] or 0.0))
            plan.folded_relations += 1
    plan.relation_rows = new


def _existing_relations(conn: Connection, plan: _Plan) -> int:
    """How many of the re-pointed relations the survivors already have (they fold into those)."""
    rows = [{"id": r["id"], "s": r["s"], "d": r["d"]} for r in plan.relation_rows.values()]
    found = 0
    for i in range(0, len(rows), _BATCH):
        out = conn.read_primary_sync(
            """UNWIND $rows AS r MATCH (:Entity {id: r.s})-[x:RELATES]->(:Entity {id: r.d}) WHERE x.id = r.id
               RETURN count(x) AS n""",
            {"rows": rows[i : i + _BATCH]},
        )
        found += int(out[0]["n"]) if out else 0
    return found


def _relation_id(source: str, target: str, type_: str, fact: str) -> str:
    return ExtractedRelation(
        source=source, target=target, type=type_, fact=fact or "", confidence=0.0, chunk_indexes=()
    ).id


def _write(conn: Connection, plan: _Plan) -> None:
    """The survivors' side of a merge; every query merges or sets to a union, so it may run twice."""
    write_entities(conn, plan.entity_updates.values(), EXTRACTION_SOURCE)
    conn.write_many(
        """UNWIND $rows AS r MATCH (e:Entity {id: r.e}), (c:Chunk {id: r.c})
           MERGE (e)-[m:MENTIONED_IN]->(c)
           SET m.span_starts = r.s, m.span_ends = r.t""",
        plan.mentions,
    )
    by_origin: dict[str, list[dict[str, Any]]] = {}
    for row in plan.relation_rows.values():
        by_origin.setdefault(row["origin"] or EXTRACTION_SOURCE, []).append(row)
    for origin, rows in sorted(by_origin.items()):
        write_relations(conn, rows, origin)  # they keep their provenance (extraction, agent)


def _record_redirects(conn: Connection, to: dict[str, str], names: dict[str, str]) -> None:
    """Record each merged-away id with its survivor, and move redirects that pointed at a
    merged-away id on to its survivor (redirects stay one step long)."""
    at = datetime.now(UTC).isoformat()
    rows = [{"id": g, "s": s, "n": names[s]} for g, s in sorted(to.items())]
    conn.write_many(
        f"""UNWIND $rows AS r
            MERGE (x:{ENTITY_REDIRECT} {{id: r.id}}) SET x.survivor = r.s, x.name = r.n, x.at = $at""",
        rows,
        at=at,
    )
    conn.write_many(
        f"""UNWIND $rows AS r MATCH (x:{ENTITY_REDIRECT}) WHERE x.survivor = r.id
            SET x.survivor = r.s, x.name = r.n""",
        rows,
    )


def delete_entities(conn: Connection, ids: Sequence[str]) -> None:
    for i in range(0, len(ids), _BATCH):
        conn.write_sync(
            "UNWIND $ids AS eid MATCH (e:Entity {id: eid}) DETACH DELETE e", {"ids": list(ids[i : i + _BATCH])}
        )
