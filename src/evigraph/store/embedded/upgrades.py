"""Bringing a file an earlier release wrote up to this release's columns, on a writable open.

Columns a later release added (`ADDED_COLUMNS`) are added in place, and full-text indexes it
retired (`RETIRED_FTS_INDEXES`) are dropped. List columns on
relationships that became text (`RETYPED_COLUMNS`, see `packed` for the measurement that made
it worth it) are not converted in place: Kuzu 0.11.3 crashed (segfault) closing a database in
which one session had renamed such a column, added its replacement, filled it and dropped the old
one (a CHECKPOINT before the drop avoided it), and a fill through `list_filter` crashed the
checkpoint after it. An upgrade should not lean on that corner of the engine, so `evigraph
compact` converts them instead, as it copies every row into a new file: the crash-safe path it
already is. Until then the file reads as it is and every other write is refused with that hint
(`Executor.refusal`).
"""

from __future__ import annotations

from pathlib import Path

from evigraph.errors import StoreError
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import ADDED_COLUMNS, RETIRED_FTS_INDEXES, RETYPED_COLUMNS


def upgrade_columns(tx: Tx, path: Path) -> StoreError | None:
    """Add the columns a later release introduced; return why writes must wait for a compaction
    if the file holds lists this release retyped (the store then refuses every write but that)."""
    if retyped := lists_to_retype(tx):
        columns = ", ".join(f"{t}.{c}" for t, c, _ in retyped)
        return StoreError(
            f"{path} was written by an earlier evigraph that kept {columns} as lists; "
            "this release writes them as text and must convert the file first",
            hint=f"run `evigraph compact --db {path}` once (it rewrites the file, keeping every row); "
            "reading it read-only works meanwhile",
        )
    for table, column, kind in missing_columns(tx):
        tx.execute(f"ALTER TABLE {table} ADD {column} {kind}").close()
    return None


def drop_retired_indexes(tx: Tx) -> None:
    """Drop the full-text indexes this release no longer reads (`RETIRED_FTS_INDEXES`)."""
    existing = {r["name"] for r in tx.rows("CALL SHOW_INDEXES() RETURN index_name AS name")}
    for name, table in RETIRED_FTS_INDEXES.items():
        if name in existing:
            tx.execute(f"CALL DROP_FTS_INDEX('{table}', '{name}')").close()


def missing_columns(tx: Tx) -> list[tuple[str, str, str]]:
    """The added columns a file lacks, in the tables it has: a table it lacks (a file from before
    traces, opened read-only) is read as empty, and created whole on a writable open."""
    tables = {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}
    names = table_columns(tx, {table for table, _, _ in ADDED_COLUMNS} & tables)
    return [(t, c, k) for t, c, k in ADDED_COLUMNS if t in names and c not in names[t]]


def lists_to_retype(tx: Tx) -> list[tuple[str, str, str]]:
    types = table_columns(tx, {table for table, _, _ in RETYPED_COLUMNS})
    return [(t, c, k) for t, c, k in RETYPED_COLUMNS if types[t].get(c, k).endswith("]")]


def table_columns(tx: Tx, tables: set[str]) -> dict[str, dict[str, str]]:
    """Each table's column names with their engine types, as `TABLE_INFO` spells them."""
    return {
        table: {r["name"]: str(r["type"]) for r in tx.rows(f"CALL TABLE_INFO('{table}') RETURN name, type")}
        for table in tables
    }
