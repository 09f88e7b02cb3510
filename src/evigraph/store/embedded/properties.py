"""Declared properties on the embedded store: one real column per property name.

The engine has a fixed schema, so there were two ways to hold what users declare: one JSON
(or MAP) column, or a column per property added with `ALTER TABLE ... ADD` when it is declared.
Columns won: a Cypher query reads `e.founded_year` as it reads `e.name` (compares it, sorts by
it, returns it as a column), `get_ontology` lists it with its engine type, and FalkorDB, which
has no schema, stores the same names as plain properties, so one query reads both stores. A JSON
column would need string functions (or an engine extension) in every query and would differ
from FalkorDB. The cost is that a column is never dropped (the engine rewrites the table), which
is also what keeps values when a declaration leaves a property out; and every entity type's
property of one name shares its column, so it has one type (`property_types.column_types`).

Who set each value is JSON in `_property_sources` (internal: `_`-prefixed, hidden from whole
nodes in Cypher), added with the first property.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.errors import StoreError
from evigraph.property_types import (
    ENGINE_TYPES,
    OWNERS,
    SOURCES_COLUMN,
    TYPE_FIELDS,
    Owner,
    PropertyKind,
    PropertyOwner,
    StoredProperties,
    grouped,
    with_sources,
)
from evigraph.store.caches import Cached
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.embedded.upgrades import table_columns

TABLES: dict[Owner, str] = {"entity": "Entity", "relation": "RELATES"}
COLUMNS_KEY = "property_columns"


def columns(tx: Tx, owner: Owner) -> dict[str, str]:
    return table_columns(tx, {TABLES[owner]})[TABLES[owner]]


def add_columns(tx: Tx, owner: Owner, wanted: Mapping[str, PropertyKind]) -> bool:
    """Whether a column was added: most calls find every column there already."""
    have = columns(tx, owner)
    added = False
    table = TABLES[owner]
    for name, kind in wanted.items():
        engine_type = ENGINE_TYPES[PropertyKind(kind)]
        if name not in have:
            tx.execute(f"ALTER TABLE {table} ADD `{name}` {engine_type}").close()
            added = True
        elif have[name] != engine_type:
            raise StoreError(
                f"{table}.{name} holds {have[name]} values; it cannot hold {kind} values",
                hint=f"declare {name} with its stored type, or choose another property name",
            )
    return added


def _match(owner: Owner) -> str:
    """Find each row's owner: an entity by its key, a relation by its ends and id (the fast path,
    see `writes`), both projected to plain variables first."""
    if owner == "entity":
        return "UNWIND $rows AS r WITH r.id AS oid, r.v AS v MATCH (x:Entity {id: oid})"
    return (
        "UNWIND $rows AS r WITH r.id AS oid, r.s AS s, r.d AS d, r.v AS v "
        "MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = oid"
    )


def _row(o: PropertyOwner, v: Any = None) -> dict[str, Any]:
    return {"id": o.id, "s": o.source or "", "d": o.target or "", "v": v}


def write(tx: Tx, owner: Owner, writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], source: str) -> list[str]:
    have = columns(tx, owner)
    names = {n for _, values in writes for n in values}
    if unknown := sorted(n for n in names if n not in have):
        raise StoreError(
            f"no column for property {', '.join(unknown)} on {TABLES[owner]}",
            hint="declare the property (set_ontology) before writing it",
        )
    rows = [_row(o) for o, _ in writes]
    found = {
        r["id"]: r["src"]
        for r in tx.rows(f"{_match(owner)} RETURN x.id AS id, x.{SOURCES_COLUMN} AS src", {"rows": rows})
    }
    for name in sorted(names):
        engine_type = have[name]
        part = [_row(o, values[name]) for o, values in writes if name in values and o.id in found]
        tx.run_batched(f"{_match(owner)} SET x.`{name}` = CAST(v AS {engine_type})", part)
    sources = [_row(o, held) for o, _, held in with_sources(writes, found, source)]
    tx.run_batched(f"{_match(owner)} SET x.{SOURCES_COLUMN} = v", sources)
    return [o.id for o, _ in writes if o.id not in found]


def read(
    tx: Tx, owner: Owner, owners: Sequence[PropertyOwner], names: Sequence[str], have: Mapping[str, str]
) -> dict[str, StoredProperties]:
    wanted = [n for n in dict.fromkeys(names) if n in have]
    if not wanted or not owners:
        return {}
    picked = ", ".join(f"x.`{n}` AS `p_{n}`" for n in wanted)
    rows = tx.rows(
        f"{_match(owner)} RETURN x.id AS id, x.{SOURCES_COLUMN} AS src, {picked}",
        {"rows": [_row(o) for o in owners]},
    )
    out: dict[str, StoredProperties] = {}
    for r in rows:
        values = {n: r[f"p_{n}"] for n in wanted if r[f"p_{n}"] is not None}
        if values:
            sources = json.loads(r["src"] or "{}")
            out[r["id"]] = StoredProperties(values=values, sources={n: sources[n] for n in values if n in sources})
    return out


def count(tx: Tx, owner: Owner, names: Sequence[str], types: Sequence[str] | None) -> dict[str, int]:
    have = columns(tx, owner)
    pattern = "(x:Entity)" if owner == "entity" else "(:Entity)-[x:RELATES]->(:Entity)"
    of_type = "" if types is None else f" AND x.{TYPE_FIELDS[owner]} IN $types"
    params = {} if types is None else {"types": list(types)}
    return {
        n: int(tx.column(f"MATCH {pattern} WHERE x.`{n}` IS NOT NULL{of_type} RETURN count(x)", params)[0])
        if n in have
        else 0
        for n in dict.fromkeys(names)
    }


class EmbeddedPropertyOps:
    """The declared-properties section of `EmbeddedStore`, kept apart so the store module stays a wiring."""

    _cache: Cached

    @property
    def executor(self) -> Executor:
        raise NotImplementedError  # EmbeddedStore's

    async def add_property_columns(self, owner: Owner, columns: Mapping[str, PropertyKind]) -> None:
        if not columns:
            return
        added = True  # unless the write says otherwise: a failed one may have added some
        try:
            added = await self.executor.write(lambda tx: add_columns(tx, owner, columns))
        finally:
            if added:  # the schema get_ontology lists, and the columns reads pick from
                self._cache.drop("schema")
                self._cache.drop(COLUMNS_KEY)

    async def write_properties(
        self, writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], source: str
    ) -> list[str]:
        missing: list[str] = []
        for owner, mine in grouped(writes):
            missing += await self._write_owned(owner, mine, source)
        return missing

    async def _write_owned(
        self, owner: Owner, writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], source: str
    ) -> list[str]:
        # No generation bump and no cache to drop: no index or cached read derives from property
        # values (Cypher reads them from the file each time).
        return await self.executor.write(lambda tx: write(tx, owner, writes, source))

    async def read_properties(
        self, owners: Sequence[PropertyOwner], names: Sequence[str]
    ) -> dict[str, StoredProperties]:
        if not owners or not names:
            return {}
        have = await self._columns()
        kinds = grouped([(o, None) for o in owners])

        def work(tx: Tx) -> dict[str, StoredProperties]:  # both kinds in one read
            out: dict[str, StoredProperties] = {}
            for owner, mine in kinds:
                out.update(read(tx, owner, [o for o, _ in mine], names, have[owner]))
            return out

        return await self.executor.read(work)

    async def _columns(self) -> dict[Owner, dict[str, str]]:
        """Each table's columns, kept in the cache: read on every retrieve once properties are
        declared, and changed only by `add_property_columns` (which drops them)."""
        found: dict[Owner, dict[str, str]] = await self._cache.fetch(
            COLUMNS_KEY, lambda: self.executor.read_sync(lambda tx: {o: columns(tx, o) for o in OWNERS})
        )
        return found

    async def count_property_values(
        self, owner: Owner, names: Sequence[str], types: Sequence[str] | None = None
    ) -> dict[str, int]:
        return await self.executor.read(lambda tx: count(tx, owner, names, types))
