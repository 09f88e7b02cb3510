"""Copying every table of one embedded database into another, in batches of rows.

The engine cannot do it alone: EXPORT DATABASE fails on the full-text index's stopwords table,
and an attached database becomes the connection's only database (no query reads one file and
writes another). So rows pass through Python, read in pages of node offsets (a whole big table
at once would be held twice, in the engine's result and in Python) and written as one UNWIND a
batch. What is copied is read from the source's catalog, not from `schema.py`, so a table or a
column a later release added travels too.

How a batch travels is set by Kuzu 0.11.3, each measured on 1,000 rows of a 384-float vector:
- a list of row structs (`UNWIND $rows AS r`, as `writes` does) takes 4.6 s, the vectors' floats
  converted one by one at ~12 us; a list per column (`UNWIND range(1, $n) AS i ... $c0[i]`)
  takes 1.0 s;
- text cast in the engine (`CAST('[0.1, ...]' AS FLOAT[])`) is as quick, but gives every row of
  an UNWIND the list length of its first row (`'[9,36]'` then `'[1]'` came back `[9, 36]` and
  `[1, 36]`), so it is not used;
- a column list turns a NULL list into `[]`, so a mask beside each column says which rows are
  NULL; and it cannot be typed when every value is NULL or empty (an engine assertion, or "Data
  type ... should not be modified"), so each column list ends with a typed value no row reads.
Checked on 2,000 random rows (NULLs, empty and nested lists of every length, quotes, commas and
brackets in strings, timestamps to the microsecond): every value came back equal.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from evigraph.errors import StoreError
from evigraph.store.embedded.executor import Tx, value_batches
from evigraph.store.embedded.packed import pack
from evigraph.store.embedded.schema import RETYPED_COLUMNS

PAGE_ROWS = 2000
"""Node offsets per page read. A page of passages with sentence vectors is tens of
MB of Python floats; reading a page costs about a twelfth of a full scan (20,000 rows of vectors:
0.08 s a page, 0.68 s the whole table)."""

_LIST_SUFFIX = re.compile(r"\[\d*\]$")
_SAMPLES: dict[str, Any] = {
    "STRING": "",
    "BOOL": False,
    "DOUBLE": 0.0,
    "FLOAT": 0.0,
    "DATE": dt.date(2000, 1, 1),
    "TIMESTAMP": dt.datetime(2000, 1, 1),
    **dict.fromkeys(("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "SERIAL"), 0),
}
"""A value of each type the copy knows, to type a column list every row of which is NULL or empty."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str

    def sample(self) -> Any:
        """A value of this column's type: a one-element list (of lists...) of a base value."""
        inner = _LIST_SUFFIX.sub("", self.type, count=1)
        if inner != self.type:
            return [Column(self.name, inner).sample()]
        if self.type not in _SAMPLES:
            raise StoreError(
                f"column {self.name} is of a type compaction cannot copy ({self.type})",
                hint="the knowledge base was left as it was; report it",
            )
        return _SAMPLES[self.type]


@dataclass(frozen=True)
class End:
    """One FROM-TO pair of a relationship table, with the primary keys that find its nodes."""

    source: str
    target: str
    source_key: str
    target_key: str


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    """Properties, the primary key included; a relationship's internal id is not one."""
    key: str | None = None
    """The primary key of a node table; None for a relationship table."""
    ends: tuple[End, ...] = ()

    @property
    def is_rel(self) -> bool:
        return self.key is None


def read_tables(tx: Tx) -> list[Table]:
    """Every table of the database: node tables first (relationships need their nodes), by name."""
    nodes, rels = [], []
    for row in tx.rows("CALL SHOW_TABLES() RETURN name, type ORDER BY name"):
        name, kind = row["name"], row["type"]
        if kind == "NODE":
            info = tx.rows(f"CALL TABLE_INFO('{name}') RETURN name, type, `primary key` AS pk")
            key = next(r["name"] for r in info if r["pk"])
            nodes.append(Table(name, tuple(Column(r["name"], r["type"]) for r in info), key=key))
        elif kind == "REL":
            info = tx.rows(f"CALL TABLE_INFO('{name}') RETURN name, type")
            ends = tx.rows(
                f"""CALL SHOW_CONNECTION('{name}') RETURN `source table name` AS s, `destination table name` AS d,
                    `source table primary key` AS sk, `destination table primary key` AS dk"""
            )
            columns = tuple(Column(r["name"], r["type"]) for r in info)
            rels.append(Table(name, columns, ends=tuple(End(e["s"], e["d"], e["sk"], e["dk"]) for e in ends)))
        else:
            raise StoreError(
                f"table {name} is of a kind compaction cannot copy ({kind})",
                hint="the knowledge base was left as it was; report it",
            )
    return nodes + rels


def count_rows(tx: Tx, table: Table) -> int:
    """Rows a copy of `table` reads: relationships whose two nodes exist (the ghost edges a crash
    can leave, see `integrity`, count in a raw scan but are never copied)."""
    if not table.is_rel:
        return int(tx.column(f"MATCH (n:`{table.name}`) RETURN count(n)")[0])
    return sum(
        int(tx.column(f"MATCH (a:`{e.source}`)-[r:`{table.name}`]->(b:`{e.target}`) RETURN count(r)")[0])
        for e in table.ends
    )


def copy_table(source: Tx, target: Tx, table: Table, step: Callable[[int], None]) -> int:
    """Copy every row of `table` from `source` into the same table of `target`; return how many.

    `step(rows)` is called after each batch written. Node rows keep their relative order, so the
    new file holds them as the old one did, less the gaps deletes left. A list column this release
    retyped to text (`RETYPED_COLUMNS`) is packed: compaction is how an old file is upgraded.
    """
    columns = tuple(Column(c.name, retyped(table.name, c)) for c in table.columns)
    packed = [f"v{i}" for i, (old, new) in enumerate(zip(table.columns, columns, strict=True)) if old != new]
    samples = [c.sample() for c in columns]
    copied = 0
    for read, paged, write, keys in _plans(Table(table.name, columns, table.key, table.ends)):
        for rows in _pages(source, paged, read):
            for row in rows if packed else ():
                for name in packed:
                    row[name] = None if row[name] is None else pack(row[name])
            for batch in value_batches(rows, len(rows)):
                target.execute(write, _columns(batch, keys, samples)).close()
                copied += len(batch)
                step(len(batch))
    return copied


def retyped(table: str, column: Column) -> str:
    """The type this release gives `column` of `table`: text where a list was retyped."""
    for t, c, kind in RETYPED_COLUMNS:
        if (t, c) == (table, column.name) and column.type.endswith("]"):
            return kind
    return column.type


_RANGE = "offset(id({0})) >= $lo AND offset(id({0})) < $hi"


def _plans(table: Table) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(read query, node table its pages run over, write query, node keys it reads first) per part.

    Row values are `v0`, `v1`... in the read and `$c0`, `$c1`... (with masks `$m0`...) in the
    write, so no property name (`index` is one) meets the parser as a keyword.
    """
    values = ", ".join(
        f"`{c.name}`: CASE WHEN $m{i}[i] THEN CAST($c{i}[i] AS {c.type}) ELSE NULL END"
        for i, c in enumerate(table.columns)
    )
    if not table.is_rel:
        fields = ", ".join(f"n.`{c.name}` AS v{i}" for i, c in enumerate(table.columns))
        read = f"MATCH (n:`{table.name}`) WHERE {_RANGE.format('n')} RETURN {fields}"
        return [(read, table.name, f"UNWIND range(1, $n) AS i CREATE (:`{table.name}` {{{values}}})", ())]
    fields = "".join(f", r.`{c.name}` AS v{i}" for i, c in enumerate(table.columns))
    plans: list[tuple[str, str, str, tuple[str, ...]]] = []
    for e in table.ends:
        read = (
            f"MATCH (a:`{e.source}`)-[r:`{table.name}`]->(b:`{e.target}`) WHERE {_RANGE.format('a')} "
            f"RETURN a.`{e.source_key}` AS src, b.`{e.target_key}` AS dst{fields}"
        )
        # Nodes matched on plain variables, the second after a WITH: keyed otherwise, the engine
        # plans a cross product with the whole table (see `writes`).
        write = (
            f"UNWIND range(1, $n) AS i WITH i, $src[i] AS src, $dst[i] AS dst "
            f"MATCH (a:`{e.source}` {{`{e.source_key}`: src}}) WITH a, i, dst "
            f"MATCH (b:`{e.target}` {{`{e.target_key}`: dst}}) CREATE (a)-[:`{table.name}` {{{values}}}]->(b)"
        )
        plans.append((read, e.source, write, ("src", "dst")))
    return plans


def _pages(tx: Tx, paged: str, query: str) -> Iterator[list[dict[str, Any]]]:
    """Rows of `query` over pages of `paged`'s node offsets, up to the last offset in use."""
    last = tx.column(f"MATCH (n:`{paged}`) RETURN max(offset(id(n)))")[0]
    if last is None:
        return
    for lo in range(0, int(last) + 1, PAGE_ROWS):
        rows = tx.rows(query, {"lo": lo, "hi": lo + PAGE_ROWS})
        if rows:
            yield rows


def _columns(rows: list[dict[str, Any]], keys: tuple[str, ...], samples: list[Any]) -> dict[str, Any]:
    """A batch as the write query reads it: a list per column, a NULL mask beside each, and a
    typed value after the last row (see the module's docstring for why)."""
    params: dict[str, Any] = {"n": len(rows)}
    for key in keys:
        params[key] = [r[key] for r in rows]
    for i, sample in enumerate(samples):
        values = [r[f"v{i}"] for r in rows]
        params[f"c{i}"] = [sample if v is None else v for v in values] + [sample]
        params[f"m{i}"] = [v is not None for v in values] + [False]
    return params
