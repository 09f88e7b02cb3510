"""Merging entities on FalkorDB, and re-pointing later writes at the survivors.

The embedded store (`store/embedded/merging.py`) merges in one transaction; the server has none
spanning queries, so a merge here is a sequence of queries ordered so that stopping after any
one of them loses nothing and running the merge again finishes it:

1. Everything the merged-away entities hold is read, and the writes are worked out in Python
   (`store/core/merge_plan.py`, the same plan as the embedded store's).
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

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from evigraph.property_types import OWNERS, SOURCES_COLUMN, Owner, declared_columns
from evigraph.store.core.merge_plan import BATCH, MergePlan, carry, carrying, plan_merges, written
from evigraph.store.core.reader import Rows
from evigraph.store.core.schema_names import ENTITY_REDIRECT, EXTRACTION_SOURCE
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.documents import write_entities, write_relations
from evigraph.store.merging import EntityMerge, MergeOutcome


def primary_reader(conn: Connection) -> Rows:
    """Reads on the primary, or through the read path when the connection is read-only (nothing
    it writes could need the latest state then): a redirect just recorded must steer the write
    that follows it, and a replica may lag behind."""
    return conn.read_sync if conn.read_only else conn.read_primary_sync


def _values(column: Any) -> list[Any]:
    return list(column or [])


def merge_entities(
    conn: Connection, merges: Sequence[EntityMerge], renew: Callable[[], None] = lambda: None
) -> MergeOutcome:
    """Fold each merge's entities into its survivor; see the module docstring for the order.

    The caller holds the merge lock (`ServerLock`), so no other merge runs meanwhile; `renew`
    extends it between steps.
    """
    carried = {owner: _declared(conn, owner, merges) for owner in OWNERS}
    plan = plan_merges(
        conn.read_primary_sync, merges, _values, _values, carried["relation"], carried["entity"]
    )  # the plan must see the latest state
    if not plan.to:
        return plan.outcome()
    existed = _existing_relations(conn, plan)
    plan.moved_relations -= existed
    plan.folded_relations += existed
    renew()
    _record_redirects(conn, plan.to, plan.names)
    _write(conn, plan)
    renew()
    gone = sorted(plan.to)
    delete_entities(conn, gone)
    return plan.outcome()


def unfinished_merges(conn: Connection) -> dict[str, str]:
    """Merged-away id -> survivor, for redirects whose merged-away entity still exists: a merge
    stopped before its last step (or an entity re-created by a write that raced the merge)."""
    rows = conn.read_sync(
        f"""MATCH (r:{ENTITY_REDIRECT}) WITH r MATCH (e:Entity {{id: r.id}})
            RETURN r.id AS id, r.survivor AS s"""
    )
    return {r["id"]: r["s"] for r in rows}


def _existing_relations(conn: Connection, plan: MergePlan) -> int:
    """How many of the re-pointed relations the survivors already have (they fold into those)."""
    rows = [{"id": r["id"], "s": r["s"], "d": r["d"]} for r in plan.relation_rows.values()]
    found = 0
    for i in range(0, len(rows), BATCH):
        out = conn.read_primary_sync(
            """UNWIND $rows AS r MATCH (:Entity {id: r.s})-[x:RELATES]->(:Entity {id: r.d}) WHERE x.id = r.id
               RETURN count(x) AS n""",
            {"rows": rows[i : i + BATCH]},
        )
        found += int(out[0]["n"]) if out else 0
    return found


def _write(conn: Connection, plan: MergePlan) -> None:
    """The survivors' side of a merge; every query merges or sets to a union, so it may run twice."""
    write_entities(conn, plan.entity_updates.values(), EXTRACTION_SOURCE)
    conn.write_many(
        """UNWIND $rows AS r MATCH (e:Entity {id: r.e}), (c:Chunk {id: r.c})
           MERGE (e)-[m:MENTIONED_IN]->(c)
           SET m.span_starts = r.s, m.span_ends = r.t""",
        [{k: v for k, v in m.items() if k != "had"} for m in plan.mentions],
    )
    by_origin: dict[str, list[dict[str, Any]]] = {}
    for row in plan.relation_rows.values():
        by_origin.setdefault(row["origin"] or EXTRACTION_SOURCE, []).append(written(row))
    for origin, rows in sorted(by_origin.items()):
        write_relations(conn, rows, origin)  # they keep their provenance (extraction, agent)
    _carry(conn, "entity", plan.entity_carry)
    _carry(conn, "relation", carrying(plan))


def _declared(conn: Connection, owner: Owner, merges: Sequence[EntityMerge]) -> list[str]:
    """The declared properties the merged-away entities (their relations) hold: no schema lists them."""
    ids = sorted({i for m in merges for i in m.merged})
    pattern = "(x:Entity {id: eid})" if owner == "entity" else "(:Entity {id: eid})-[x:RELATES]-(:Entity)"
    rows = conn.read_primary_sync(
        f"UNWIND $ids AS eid MATCH {pattern} UNWIND keys(x) AS k RETURN DISTINCT k", {"ids": ids}
    )
    return declared_columns(owner, [r["k"] for r in rows])


_MATCH = {
    "relation": "UNWIND $rows AS r MATCH (:Entity {id: r.s})-[x:RELATES]->(:Entity {id: r.d}) WHERE x.id = r.id",
    "entity": "UNWIND $rows AS r MATCH (x:Entity {id: r.id}) WHERE true",
}


def _carry(conn: Connection, owner: Owner, rows: list[dict[str, Any]]) -> None:
    """What the merged rows carry (fact vectors, declared properties), set where the survivor (the
    relation a re-pointed one became, which may have existed) holds none; setting only what is
    missing, it may run twice, as every step of a merge may."""
    if not rows:
        return
    match = _MATCH[owner]
    keys = [{"s": r["s"], "d": r["d"], "id": r["id"]} for r in rows]
    conn.write_many(
        f"{match} AND x.embedding IS NULL SET x.embedding = vecf32(r.v)",
        [{**k, "v": r["vec"]} for k, r in zip(keys, rows, strict=True) if r["vec"]],
    )
    names = sorted({n for r in rows for n in r["values"]})
    held: dict[str, dict[str, Any]] = {}
    for i in range(0, len(keys), BATCH):
        for found in conn.read_primary_sync(
            f"{match} RETURN x.id AS id, x.{SOURCES_COLUMN} AS src, [n IN $names | x[n]] AS vals",
            {"rows": keys[i : i + BATCH], "names": names},
        ):
            held[found["id"]] = found
    out = []
    for k, r in zip(keys, rows, strict=True):
        if (h := held.get(r["id"])) is not None:
            values, src = carry(r, dict(zip(names, h["vals"], strict=True)), h["src"])
            out.append({**k, "v": values, "src": src})
    conn.write_many(f"{match} SET x += r.v, x.{SOURCES_COLUMN} = r.src", out)


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
    for i in range(0, len(ids), BATCH):
        conn.write_sync(
            "UNWIND $ids AS eid MATCH (e:Entity {id: eid}) DETACH DELETE e", {"ids": list(ids[i : i + BATCH])}
        )
