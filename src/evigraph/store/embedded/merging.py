"""Merging entities in the embedded graph, and re-pointing later writes at the survivors.

A batch of merges is one transaction (the caller's): everything the merged-away entities hold is
read first, then their mentions and relations are deleted with them, then re-created on the
survivors, folded with what the survivors already had. Reading everything before writing keeps
clear of the engine's blind spots listed in `writes` (subqueries that miss edges written earlier
in the same transaction; `DETACH DELETE` replaying wrongly after a crash).

Each merged-away id is recorded in `ENTITY_REDIRECT` with its survivor; `redirect_versions`
reads that table before a document batch is written, so a later ingest naming the old spelling
attaches to the survivor. Redirects are kept flat: when a survivor is merged away in turn, the
redirects pointing at it are moved on to the new survivor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evigraph.graphdata import redirect_graph, union
from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, GraphData
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.packed import pack, unpack_ids, unpack_ints
from evigraph.store.embedded.schema import ENTITY_REDIRECT, EXTRACTION_SOURCE
from evigraph.store.embedded.writes import _write_entities, _write_relations, delete_entities
from evigraph.store.merging import EntityMerge, EntityRecord, MergeOutcome

_BATCH = 2000


def entity_records(tx: Tx) -> list[EntityRecord]:
    counts = {
        r["id"]: int(r["n"])
        for r in tx.rows("MATCH (e:Entity)-[:MENTIONED_IN]->(:Chunk) RETURN e.id AS id, count(*) AS n")
    }
    rows = tx.rows(
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


def redirects(tx: Tx, ids: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
    """Merged-away id -> (survivor id, survivor name), for `ids` (every one recorded when None)."""
    if ids is None:
        rows = tx.rows(f"MATCH (r:{ENTITY_REDIRECT}) RETURN r.id AS id, r.survivor AS s, r.name AS n")
    else:
        wanted = sorted(set(ids))
        rows = []
        for i in range(0, len(wanted), _BATCH):
            rows += tx.rows(
                f"""UNWIND $ids AS k MATCH (r:{ENTITY_REDIRECT} {{id: k}})
                    RETURN r.id AS id, r.survivor AS s, r.name AS n""",
                {"ids": wanted[i : i + _BATCH]},
            )
    return {r["id"]: (r["s"], r["n"] or "") for r in rows}


def redirect_versions(tx: Tx, versions: Sequence[DocumentVersion]) -> list[DocumentVersion]:
    """The versions with every merged-away entity id re-pointed at its survivor."""
    ids = {e.id for v in versions for e in v.graph.entities}
    found = redirects(tx, ids) if ids else {}
    if not found:
        return list(versions)
    return [v.model_copy(update={"graph": redirect_graph(v.graph, found)}) for v in versions]


@dataclass
class _Plan:
    """A batch's writes, worked out in Python from what was read."""

    to: dict[str, str]
    entity_updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    mention_creates: list[dict[str, Any]] = field(default_factory=list)
    mention_updates: list[dict[str, Any]] = field(default_factory=list)
    relation_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    folded_mentions: int = 0
    moved_relations: int = 0
    folded_relations: int = 0


def merge_entities(tx: Tx, merges: Sequence[EntityMerge]) -> MergeOutcome:
    """Fold each merge's entities into its survivor; see the module docstring for the order."""
    wanted = {i for m in merges for i in (m.survivor, *m.merged)}
    rows = {r["id"]: r for r in _entity_rows(tx, wanted)}
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
    moved_mentions = _plan_mentions(tx, plan)
    _plan_relations(tx, plan)
    gone = sorted(to)
    delete_entities(tx, gone)
    _write(tx, plan)
    _record_redirects(tx, to, {s: rows[s]["name"] for s in set(to.values())})
    return MergeOutcome(
        merged=len(gone),
        mentions_moved=moved_mentions,
        mentions_folded=plan.folded_mentions,
        relations_moved=plan.moved_relations,
        relations_folded=plan.folded_relations,
        skipped=tuple(skipped),
    )


def _entity_rows(tx: Tx, ids: Iterable[str]) -> list[dict[str, Any]]:
    return tx.rows(
        """UNWIND $ids AS eid MATCH (e:Entity {id: eid})
           RETURN e.id AS id, e.name AS name, e.aliases AS aliases, e.descriptions AS descs""",
        {"ids": sorted(ids)},
    )


def _plan_entities(plan: _Plan, rows: dict[str, dict[str, Any]]) -> None:
    """Survivors keep every name, alias and description of what they absorb (`_write_entities`
    unites these with their own)."""
    for old, survivor in sorted(plan.to.items()):
        row = plan.entity_updates.setdefault(
            survivor, {"id": survivor, "name": rows[survivor]["name"], "label": "", "descs": [], "aliases": []}
        )
        row["aliases"] = list(union(tuple(row["aliases"]), (rows[old]["name"] or "", *(rows[old]["aliases"] or ()))))
        row["descs"] = list(union(tuple(row["descs"]), tuple(rows[old]["descs"] or ())))


def _plan_mentions(tx: Tx, plan: _Plan) -> int:
    """A survivor already naming a passage gets the spans added to its mention; else a new one."""
    query = """UNWIND $ids AS eid MATCH (e:Entity {id: eid})-[m:MENTIONED_IN]->(c:Chunk)
               RETURN e.id AS e, c.id AS c, m.span_starts AS s, m.span_ends AS t"""
    spans: dict[tuple[str, str], set[tuple[int, int]]] = {}
    had: set[tuple[str, str]] = set()
    for r in tx.rows(query, {"ids": sorted(set(plan.to.values()))}):
        key = (r["e"], r["c"])
        had.add(key)
        spans.setdefault(key, set()).update(zip(unpack_ints(r["s"]), unpack_ints(r["t"]), strict=False))
    touched: set[tuple[str, str]] = set()
    moved = 0
    for r in tx.rows(query, {"ids": sorted(plan.to)}):
        key = (plan.to[r["e"]], r["c"])
        if key in had or key in touched:
            plan.folded_mentions += 1
        else:
            moved += 1
        touched.add(key)
        spans.setdefault(key, set()).update(zip(unpack_ints(r["s"]), unpack_ints(r["t"]), strict=False))
    for key in sorted(touched):
        ordered = sorted(spans[key])
        row = {"e": key[0], "c": key[1], "s": pack(a for a, _ in ordered), "t": pack(b for _, b in ordered)}
        (plan.mention_updates if key in had else plan.mention_creates).append(row)
    return moved


def _plan_relations(tx: Tx, plan: _Plan) -> None:
    """Relations get the ids their new ends give them; one that lands on an existing relation
    adds its passages to it, one that would join a survivor to itself goes."""
    fields = """RETURN x.id AS id, a.id AS s, b.id AS d, x.type AS type, x.fact AS fact, x.confidence AS conf,
                      x.source_chunks AS src, x._source AS origin"""
    ids = {"ids": sorted(plan.to)}
    found = tx.rows(f"UNWIND $ids AS eid MATCH (a:Entity {{id: eid}})-[x:RELATES]->(b:Entity) {fields}", ids)
    found += tx.rows(f"UNWIND $ids AS eid MATCH (a:Entity)-[x:RELATES]->(b:Entity {{id: eid}}) {fields}", ids)
    seen: set[tuple[str, str, str]] = set()
    new: dict[str, dict[str, Any]] = {}
    for r in found:
        if (r["id"], r["s"], r["d"]) in seen:
            continue  # between two merged-away entities: read from both ends
        seen.add((r["id"], r["s"], r["d"]))
        s, d = plan.to.get(r["s"], r["s"]), plan.to.get(r["d"], r["d"])
        if s == d:
            plan.folded_relations += 1
            continue
        rid = _relation_id(s, d, r["type"], r["fact"])
        row = new.get(rid)
        if row is None:
            src = unpack_ids(r["src"])
            new[rid] = {"id": rid, "s": s, "d": d, "type": r["type"], "fact": r["fact"], "src": src}
            new[rid].update(conf=float(r["conf"] or 0.0), origin=r["origin"])
            plan.moved_relations += 1
        else:
            row["src"] = list(dict.fromkeys([*row["src"], *unpack_ids(r["src"])]))
            row["conf"] = max(row["conf"], float(r["conf"] or 0.0))
            plan.folded_relations += 1
    plan.relation_rows = new


def _relation_id(source: str, target: str, type_: str, fact: str) -> str:
    return ExtractedRelation(
        source=source, target=target, type=type_, fact=fact or "", confidence=0.0, chunk_indexes=()
    ).id


def _write(tx: Tx, plan: _Plan) -> None:
    _write_entities(tx, plan.entity_updates, datetime.now(UTC).replace(tzinfo=None))
    tx.run_batched(
        """UNWIND $rows AS r WITH r.e AS e_id, r.c AS c_id, r.s AS span_s, r.t AS span_e
           MATCH (e:Entity {id: e_id}) WITH e, c_id, span_s, span_e MATCH (c:Chunk {id: c_id})
           CREATE (e)-[:MENTIONED_IN {span_starts: span_s, span_ends: span_e}]->(c)""",
        plan.mention_creates,
    )
    tx.run_batched(
        """UNWIND $rows AS r WITH r.e AS e_id, r.c AS c_id, r.s AS span_s, r.t AS span_e
           MATCH (:Entity {id: e_id})-[m:MENTIONED_IN]->(:Chunk {id: c_id})
           SET m.span_starts = span_s, m.span_ends = span_e""",
        plan.mention_updates,
    )
    by_origin: dict[str, dict[str, dict[str, Any]]] = {}
    for rid, row in plan.relation_rows.items():
        by_origin.setdefault(row["origin"] or EXTRACTION_SOURCE, {})[rid] = row
    for origin, rows in sorted(by_origin.items()):
        existed = _write_relations(tx, rows, origin)  # kept their provenance (extraction, agent)
        plan.moved_relations -= existed
        plan.folded_relations += existed


def _record_redirects(tx: Tx, to: dict[str, str], names: dict[str, str]) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = [{"id": g, "s": s, "n": names[s], "at": now} for g, s in sorted(to.items())]
    tx.run_batched(
        f"""UNWIND $rows AS r WITH r.id AS id, r.s AS s, r.n AS n, r.at AS at
            MERGE (x:{ENTITY_REDIRECT} {{id: id}}) SET x.survivor = s, x.name = n, x.at = at""",
        rows,
    )
    tx.run_batched(
        f"""UNWIND $rows AS r WITH r.id AS old, r.s AS s, r.n AS n
            MATCH (x:{ENTITY_REDIRECT}) WHERE x.survivor = old SET x.survivor = s, x.name = n""",
        rows,
    )


def redirect_entities(tx: Tx, entities: Sequence[ExtractedEntity]) -> list[ExtractedEntity]:
    """Entities an agent records, merged-away ids re-pointed at their survivors."""
    found = redirects(tx, {e.id for e in entities}) if entities else {}
    if not found:
        return list(entities)
    return list(redirect_graph(GraphData(entities=tuple(entities)), found).entities)


def redirect_relations(
    tx: Tx, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]]
) -> list[tuple[ExtractedRelation, Sequence[str]]]:
    """Relations an agent records, ends that were merged away re-pointed at their survivors."""
    found = redirects(tx, {i for r, _ in relations for i in (r.source, r.target)}) if relations else {}
    if not found:
        return list(relations)

    def to(eid: str) -> str:
        return found[eid][0] if eid in found else eid

    return [(r.model_copy(update={"source": to(r.source), "target": to(r.target)}), c) for r, c in relations]


def has_redirects_table(tx: Tx) -> bool:
    """False on a read-only open of a file from before merges were recorded (nothing to redirect)."""
    return ENTITY_REDIRECT in {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}
