"""Declared properties on FalkorDB: plain properties of the entity node or the RELATES edge.

FalkorDB has no schema, so a declared property needs no column (`add_property_columns` has
nothing to do) and is read in Cypher by the same name as on the embedded store. Who set each
value is JSON in `_property_sources`, as there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from evigraph.property_types import (
    SOURCES_COLUMN,
    TYPE_FIELDS,
    Owner,
    PropertyKind,
    PropertyOwner,
    StoredProperties,
    grouped,
    with_sources,
)
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.section import FalkorSection


def _match(owner: Owner) -> str:
    if owner == "entity":
        return "UNWIND $rows AS r MATCH (x:Entity {id: r.id})"
    return "UNWIND $rows AS r MATCH (:Entity {id: r.s})-[x:RELATES {id: r.id}]->(:Entity {id: r.d})"


def _row(o: PropertyOwner, **more: Any) -> dict[str, Any]:
    return {"id": o.id, "s": o.source or "", "d": o.target or "", **more}


def write(
    conn: Connection, owner: Owner, writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], source: str
) -> list[str]:
    found = {
        r["id"]: r["src"]
        for r in conn.read_primary_sync(
            f"{_match(owner)} RETURN x.id AS id, x.{SOURCES_COLUMN} AS src", {"rows": [_row(o) for o, _ in writes]}
        )
    }
    rows = [_row(o, v=dict(values), src=held) for o, values, held in with_sources(writes, found, source)]
    if rows:  # a null in the map removes that property, as Cypher's `+=` does
        conn.write_sync(f"{_match(owner)} SET x += r.v, x.{SOURCES_COLUMN} = r.src", {"rows": rows})
    return [o.id for o, _ in writes if o.id not in found]


def read(
    conn: Connection, owners: Sequence[PropertyOwner], owner: Owner, names: Sequence[str]
) -> dict[str, StoredProperties]:
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    rows = conn.read_sync(
        f"{_match(owner)} RETURN x.id AS id, x.{SOURCES_COLUMN} AS src, [n IN $names | x[n]] AS vals",
        {"rows": [_row(o) for o in owners], "names": wanted},
    )
    out: dict[str, StoredProperties] = {}
    for r in rows:
        values = {n: v for n, v in zip(wanted, r["vals"], strict=True) if v is not None}
        if values:
            sources = json.loads(r["src"] or "{}")
            out[r["id"]] = StoredProperties(values=values, sources={n: sources[n] for n in values if n in sources})
    return out


class FalkorPropertyOps(FalkorSection):
    """The declared-properties section of `FalkorStore`."""

    async def add_property_columns(self, owner: Owner, columns: Mapping[str, PropertyKind]) -> None:
        return None  # no schema: a property exists once a value is set

    async def write_properties(
        self, writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], source: str
    ) -> list[str]:
        missing: list[str] = []
        for owner, mine in grouped(writes):
            missing += await self._write_unindexed(partial(write, self.conn, owner, mine, source))
        return missing

    async def read_properties(
        self, owners: Sequence[PropertyOwner], names: Sequence[str]
    ) -> dict[str, StoredProperties]:
        out: dict[str, StoredProperties] = {}
        for owner, mine in grouped([(o, None) for o in owners]):
            found = [o for o, _ in mine]
            out.update(await self._read(partial(read, self.conn, found, owner, names)))
        return out

    async def count_property_values(
        self, owner: Owner, names: Sequence[str], types: Sequence[str] | None = None
    ) -> dict[str, int]:
        pattern = "(x:Entity)" if owner == "entity" else "(:Entity)-[x:RELATES]->(:Entity)"
        of_type = "" if types is None else f" AND x.{TYPE_FIELDS[owner]} IN $types"

        def count() -> dict[str, int]:
            query = f"MATCH {pattern} WHERE x[$n] IS NOT NULL{of_type} RETURN count(x) AS c"
            return {
                n: int(self.conn.read_sync(query, {"n": n, "types": list(types or ())})[0]["c"])
                for n in dict.fromkeys(names)
            }

        return await self._read(count)
