"""A batch of entity merges worked out from what the store holds, and later writes re-pointed at
the survivors: the part of merging both backends share.

A backend hands in a `Rows` reader (the write transaction on the file; the primary on a server,
so the plan sees the latest state) and how its columns decode (spans and sources are packed text
on the file, lists on a server). It gets back the plan: which ids fold into which survivor, the
survivors' names, their mentions with spans united, their relations re-keyed by their new ends.
How the plan is written stays with the backend: one transaction on the file, ordered steps that
can be repeated on a server (`store/embedded/merging.py`, `store/falkordb/merging.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evigraph.graphdata import redirect_graph, union
from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, GraphData
from evigraph.property_types import SOURCES_COLUMN, holds_properties, merged_sources
from evigraph.store.core.reader import Rows
from evigraph.store.core.schema_names import ENTITY_REDIRECT
from evigraph.store.merging import EntityMerge, EntityRecord, MergeOutcome

Redirects = dict[str, tuple[str, str]]
"""Merged-away id -> (survivor id, survivor name)."""

BATCH = 2000
"""Ids a look-up statement names at once."""


@dataclass
class MergePlan:
    """A batch's writes, worked out in Python from what was read."""

    to: dict[str, str]
    """Merged-away id -> survivor."""
    names: dict[str, str]
    """Survivor -> its name (the redirects record it)."""
    skipped: list[str]
    entity_updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    mentions: list[dict[str, Any]] = field(default_factory=list)
    """Mentions as they must end: `e`, `c`, spans `s` and `t` as int lists, `had` when the
    survivor already named that passage (a set there, a create otherwise)."""
    entity_carry: list[dict[str, Any]] = field(default_factory=list)
    """Per survivor, the declared properties of what it absorbs (`values`, `props` who set them),
    which the backend's `carry` step sets where the survivor holds none."""
    relation_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each re-pointed relation by its new id; beside what `write_relations` takes, what it
    carries over (`vec` its fact vector, `props` who set its declared properties, `values` them),
    which the backend's `carry` step sets where the relation holds none."""
    moved_mentions: int = 0
    folded_mentions: int = 0
    moved_relations: int = 0
    folded_relations: int = 0

    def outcome(self) -> MergeOutcome:
        """What the merges changed, once written (the write corrects the relation counts)."""
        return MergeOutcome(
            merged=len(self.to),
            mentions_moved=self.moved_mentions,
            mentions_folded=self.folded_mentions,
            relations_moved=self.moved_relations,
            relations_folded=self.folded_relations,
            skipped=tuple(self.skipped),
        )


def plan_merges(
    read: Rows,
    merges: Sequence[EntityMerge],
    ints: Callable[[Any], Iterable[int]],
    ids: Callable[[Any], list[str]],
    carried: Sequence[str] = (),
    entity_carried: Sequence[str] = (),
) -> MergePlan:
    """The plan of `merges`; `ints` and `ids` decode a mention's spans and a relation's sources;
    `carried` (`entity_carried`) names the declared relation (entity) properties whose values the
    re-pointed relations (the survivors) keep.

    A merge naming an entity that is gone, or one named twice in the batch, is skipped (listed
    in `skipped`, by survivor): the next finalize sees it again. An empty `to` means nothing to do.
    """
    wanted = sorted({i for m in merges for i in (m.survivor, *m.merged)})
    values = "".join(f", e.`{n}` AS `p_{n}`" for n in entity_carried)
    props = f", e.{SOURCES_COLUMN} AS props" if entity_carried else ""
    rows = {
        r["id"]: r
        for r in read(
            f"""UNWIND $ids AS eid MATCH (e:Entity {{id: eid}})
               RETURN e.id AS id, e.name AS name, e.label AS label, e.aliases AS aliases,
                      e.descriptions AS descs{props}{values}""",
            {"ids": wanted},
        )
    }
    to: dict[str, str] = {}
    skipped: list[str] = []
    for m in merges:
        named = (m.survivor, *m.merged)
        if not m.merged or any(i not in rows for i in named) or any(i in to or i in to.values() for i in named):
            skipped.append(m.survivor)
            continue
        to.update(dict.fromkeys((x for x in m.merged if x != m.survivor), m.survivor))
    plan = MergePlan(to, {s: rows[s]["name"] for s in set(to.values())}, skipped)
    if to:
        _plan_entities(plan, rows)
        _plan_entity_carry(plan, merges, rows, entity_carried)
        _plan_mentions(read, plan, ints)
        _plan_relations(read, plan, ids, carried)
    return plan


def _plan_entities(plan: MergePlan, rows: dict[str, dict[str, Any]]) -> None:
    """Survivors keep every name, alias and description of what they absorb (the entity writes
    unite these with their own)."""
    for old, survivor in sorted(plan.to.items()):
        row = plan.entity_updates.setdefault(
            survivor,
            {
                "id": survivor,
                "name": rows[survivor]["name"],
                "label": rows[survivor]["label"] or "",
                "descs": [],
                "aliases": [],
            },
        )
        row["aliases"] = list(union(tuple(row["aliases"]), (rows[old]["name"] or "", *(rows[old]["aliases"] or ()))))
        row["descs"] = list(union(tuple(row["descs"]), tuple(rows[old]["descs"] or ())))


def _plan_entity_carry(
    plan: MergePlan, merges: Sequence[EntityMerge], rows: dict[str, dict[str, Any]], names: Sequence[str]
) -> None:
    """What each survivor takes of its merged-away entities' declared properties, the first merged
    one's value first (the survivor's own win at the write)."""
    for m in merges:
        if not names or m.survivor not in plan.names:
            continue
        values: dict[str, Any] = {}
        sources: str | None = None
        for gone in (i for i in m.merged if plan.to.get(i) == m.survivor):
            r = rows[gone]
            values = {**{n: r[f"p_{n}"] for n in names if r[f"p_{n}"] is not None}, **values}
            sources = merged_sources(sources, r["props"])
        if values:
            plan.entity_carry.append(
                {"id": m.survivor, "s": "", "d": "", "vec": None, "props": sources, "values": values}
            )


def _plan_mentions(read: Rows, plan: MergePlan, ints: Callable[[Any], Iterable[int]]) -> None:
    """A survivor already naming a passage gets the spans added to its mention; else a new one."""
    query = """UNWIND $ids AS eid MATCH (e:Entity {id: eid})-[m:MENTIONED_IN]->(c:Chunk)
               RETURN e.id AS e, c.id AS c, m.span_starts AS s, m.span_ends AS t"""
    spans: dict[tuple[str, str], set[tuple[int, int]]] = {}
    had: set[tuple[str, str]] = set()
    for r in read(query, {"ids": sorted(set(plan.to.values()))}):
        key = (r["e"], r["c"])
        had.add(key)
        spans.setdefault(key, set()).update(zip(ints(r["s"]), ints(r["t"]), strict=False))
    touched: set[tuple[str, str]] = set()
    for r in read(query, {"ids": sorted(plan.to)}):
        key = (plan.to[r["e"]], r["c"])
        if key in had or key in touched:
            plan.folded_mentions += 1
        else:
            plan.moved_mentions += 1
        touched.add(key)
        spans.setdefault(key, set()).update(zip(ints(r["s"]), ints(r["t"]), strict=False))
    for key in sorted(touched):
        ordered = sorted(spans[key])
        plan.mentions.append(
            {"e": key[0], "c": key[1], "s": [a for a, _ in ordered], "t": [b for _, b in ordered], "had": key in had}
        )


def _plan_relations(read: Rows, plan: MergePlan, ids: Callable[[Any], list[str]], carried: Sequence[str]) -> None:
    """Relations get the ids their new ends give them; one that lands on another re-pointed
    relation adds its passages to it (and what it carries, where that one holds none), one that
    would join a survivor to itself goes. Whether the survivors already hold the new ids is the
    write's to find (`moved_relations` counts them all)."""
    values = "".join(f", x.`{n}` AS `p_{n}`" for n in carried)
    fields = f"""RETURN x.id AS id, a.id AS s, b.id AS d, x.type AS type, x.fact AS fact, x.confidence AS conf,
                      x.source_chunks AS src, x._source AS origin, x.embedding AS vec,
                      x.{SOURCES_COLUMN} AS props{values}"""
    params = {"ids": sorted(plan.to)}
    found = read(f"UNWIND $ids AS eid MATCH (a:Entity {{id: eid}})-[x:RELATES]->(b:Entity) {fields}", params)
    found += read(f"UNWIND $ids AS eid MATCH (a:Entity)-[x:RELATES]->(b:Entity {{id: eid}}) {fields}", params)
    seen: set[tuple[str, str, str]] = set()
    for r in found:
        if (r["id"], r["s"], r["d"]) in seen:
            continue  # between two merged-away entities: read from both ends
        seen.add((r["id"], r["s"], r["d"]))
        s: str = plan.to.get(r["s"]) or r["s"]
        d: str = plan.to.get(r["d"]) or r["d"]
        if s == d:
            plan.folded_relations += 1
            continue
        rid = ExtractedRelation(
            source=s, target=d, type=r["type"], fact=r["fact"] or "", confidence=0.0, chunk_indexes=()
        ).id
        row = plan.relation_rows.get(rid)
        if row is None:
            plan.relation_rows[rid] = {
                "id": rid,
                "s": s,
                "d": d,
                "type": r["type"],
                "fact": r["fact"],
                "src": ids(r["src"]),
                "conf": float(r["conf"] or 0.0),
                "origin": r["origin"],
                "vec": _vector(r["vec"]),
                "props": r["props"],
                "values": {n: r[f"p_{n}"] for n in carried if r[f"p_{n}"] is not None},
            }
            plan.moved_relations += 1
        else:
            row["src"] = list(dict.fromkeys([*row["src"], *ids(r["src"])]))
            row["conf"] = max(row["conf"], float(r["conf"] or 0.0))
            row["vec"] = row["vec"] or _vector(r["vec"])
            row["props"] = merged_sources(row["props"], r["props"])
            row["values"] = {**{n: r[f"p_{n}"] for n in carried if r[f"p_{n}"] is not None}, **row["values"]}
            plan.folded_relations += 1


def _vector(value: Any) -> list[float] | None:
    return [float(v) for v in value] if value else None


def carry(row: dict[str, Any], held: dict[str, Any], held_sources: str | None) -> tuple[dict[str, Any], str | None]:
    """What a re-pointed relation `row` sets on the relation it becomes, which holds `held` (its
    declared values, None where unset) and `held_sources`: the values it lacks, and the sources
    united (the relation's own win, as its values do)."""
    values = {n: v for n, v in row["values"].items() if held.get(n) is None}
    return values, merged_sources(held_sources, row["props"])


def written(row: dict[str, Any]) -> dict[str, Any]:
    """A re-pointed relation as both stores' `write_relations` take it: without what it carries."""
    return {k: v for k, v in row.items() if k not in ("vec", "props", "values")}


def carrying(plan: MergePlan) -> list[dict[str, Any]]:
    """The re-pointed relations that carry anything (a fact vector, declared properties)."""
    return [r for r in plan.relation_rows.values() if r["vec"] or r["values"] or holds_properties(r["props"])]


def read_entity_records(read: Rows) -> list[EntityRecord]:
    """Every entity with its names, label and how many passages mention it (what resolution at
    finalize blocks, judges and picks survivors by)."""
    counts = {
        r["id"]: int(r["n"])
        for r in read("MATCH (e:Entity)-[:MENTIONED_IN]->(:Chunk) RETURN e.id AS id, count(*) AS n", {})
    }
    rows = read(
        """MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.label AS label, e.aliases AS aliases,
               e.descriptions AS descs""",
        {},
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


# -- re-pointing later writes ---------------------------------------------------------------


def read_redirects(read: Rows, wanted: Iterable[str] | None = None) -> Redirects:
    """The redirects recorded for `wanted` ids (every one when None)."""
    if wanted is None:
        rows = read(f"MATCH (r:{ENTITY_REDIRECT}) RETURN r.id AS id, r.survivor AS s, r.name AS n", {})
    else:
        keys = sorted(set(wanted))
        rows = []
        for i in range(0, len(keys), BATCH):
            rows += read(
                f"""UNWIND $ids AS k MATCH (r:{ENTITY_REDIRECT} {{id: k}})
                    RETURN r.id AS id, r.survivor AS s, r.name AS n""",
                {"ids": keys[i : i + BATCH]},
            )
    return {r["id"]: (r["s"], r["n"] or "") for r in rows}


def redirect_versions(read: Rows, versions: Sequence[DocumentVersion]) -> list[DocumentVersion]:
    """The versions with every merged-away entity id re-pointed at its survivor."""
    wanted = {e.id for v in versions for e in v.graph.entities}
    found = read_redirects(read, wanted) if wanted else {}
    if not found:
        return list(versions)
    return [v.model_copy(update={"graph": redirect_graph(v.graph, found)}) for v in versions]


def redirect_entities(read: Rows, entities: Sequence[ExtractedEntity]) -> list[ExtractedEntity]:
    """Entities an agent records, merged-away ids re-pointed at their survivors."""
    found = read_redirects(read, {e.id for e in entities}) if entities else {}
    if not found:
        return list(entities)
    return list(redirect_graph(GraphData(entities=tuple(entities)), found).entities)


def redirect_relations(
    read: Rows, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]]
) -> list[tuple[ExtractedRelation, Sequence[str]]]:
    """Relations an agent records, ends that were merged away re-pointed at their survivors."""
    found = read_redirects(read, {i for r, _ in relations for i in (r.source, r.target)}) if relations else {}
    if not found:
        return list(relations)

    def to(eid: str) -> str:
        return found[eid][0] if eid in found else eid

    return [(r.model_copy(update={"source": to(r.source), "target": to(r.target)}), c) for r, c in relations]
