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

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from evigraph.property_types import OWNERS, SOURCES_COLUMN, Owner, declared_columns
from evigraph.store.core.merge_plan import MergePlan, carry, carrying, plan_merges, written
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.packed import pack, unpack_ids, unpack_ints
from evigraph.store.embedded.properties import columns
from evigraph.store.embedded.schema import ENTITY_REDIRECT, EXTRACTION_SOURCE
from evigraph.store.embedded.writes import delete_entities, write_entities, write_relations
from evigraph.store.merging import EntityMerge, MergeOutcome


def merge_entities(tx: Tx, merges: Sequence[EntityMerge]) -> MergeOutcome:
    """Fold each merge's entities into its survivor; see the module docstring for the order."""
    have = {owner: columns(tx, owner) for owner in OWNERS}
    carried = {owner: declared_columns(owner, have[owner]) for owner in OWNERS}
    plan = plan_merges(tx.rows, merges, unpack_ints, unpack_ids, carried["relation"], carried["entity"])
    if not plan.to:
        return plan.outcome()
    gone = sorted(plan.to)
    delete_entities(tx, gone)
    _write(tx, plan)
    _carry(tx, "entity", plan.entity_carry, have["entity"])
    _carry(tx, "relation", carrying(plan), have["relation"])
    _record_redirects(tx, plan.to, plan.names)
    return plan.outcome()


def _write(tx: Tx, plan: MergePlan) -> None:
    write_entities(tx, plan.entity_updates, datetime.now(UTC).replace(tzinfo=None))
    packed = [{"e": m["e"], "c": m["c"], "s": pack(m["s"]), "t": pack(m["t"]), "had": m["had"]} for m in plan.mentions]
    tx.run_batched(
        """UNWIND $rows AS r WITH r.e AS e_id, r.c AS c_id, r.s AS span_s, r.t AS span_e
           MATCH (e:Entity {id: e_id}) WITH e, c_id, span_s, span_e MATCH (c:Chunk {id: c_id})
           CREATE (e)-[:MENTIONED_IN {span_starts: span_s, span_ends: span_e}]->(c)""",
        [m for m in packed if not m["had"]],
    )
    tx.run_batched(
        """UNWIND $rows AS r WITH r.e AS e_id, r.c AS c_id, r.s AS span_s, r.t AS span_e
           MATCH (:Entity {id: e_id})-[m:MENTIONED_IN]->(:Chunk {id: c_id})
           SET m.span_starts = span_s, m.span_ends = span_e""",
        [m for m in packed if m["had"]],
    )
    by_origin: dict[str, dict[str, dict[str, Any]]] = {}
    for rid, row in plan.relation_rows.items():
        by_origin.setdefault(row["origin"] or EXTRACTION_SOURCE, {})[rid] = written(row)
    for origin, rows in sorted(by_origin.items()):
        existed = write_relations(tx, rows, origin)  # kept their provenance (extraction, agent)
        plan.moved_relations -= existed
        plan.folded_relations += existed


_MATCH = {
    "relation": """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid, r.v AS v
            MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid""",
    "entity": "UNWIND $rows AS r WITH r.id AS rid, r.v AS v MATCH (x:Entity) WHERE x.id = rid",
}


def _carry(tx: Tx, owner: Owner, rows: list[dict[str, Any]], have: dict[str, str]) -> None:
    """What the merged rows carry (fact vectors, declared properties), set where the survivor (the
    relation a re-pointed one became, which may have existed) holds none, in the merge's transaction."""
    if not rows:
        return
    match = _MATCH[owner]

    def keyed(r: dict[str, Any], v: Any = None) -> dict[str, Any]:
        return {"s": r["s"], "d": r["d"], "id": r["id"], "v": v}

    tx.run_batched(
        f"{match} AND x.embedding IS NULL SET x.embedding = CAST(v AS FLOAT[])",
        [keyed(r, r["vec"]) for r in rows if r["vec"]],
    )
    names = sorted({n for r in rows for n in r["values"]})
    picked = "".join(f", x.`{n}` AS `p_{n}`" for n in names)
    held = {
        h["id"]: h
        for h in tx.rows(
            f"{match} RETURN x.id AS id, x.{SOURCES_COLUMN} AS src{picked}", {"rows": [keyed(r) for r in rows]}
        )
    }
    sets: dict[str, list[dict[str, Any]]] = {}
    sources = []
    for r in rows:
        if (h := held.get(r["id"])) is None:
            continue
        values, src = carry(r, {n: h[f"p_{n}"] for n in names}, h["src"])
        for n, v in values.items():
            sets.setdefault(n, []).append(keyed(r, v))
        sources.append(keyed(r, src))
    for n, part in sorted(sets.items()):
        tx.run_batched(f"{match} SET x.`{n}` = CAST(v AS {have[n]})", part)
    tx.run_batched(f"{match} SET x.{SOURCES_COLUMN} = v", sources)


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


def has_redirects_table(tx: Tx) -> bool:
    """False on a read-only open of a file from before merges were recorded (nothing to redirect)."""
    return ENTITY_REDIRECT in {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}
