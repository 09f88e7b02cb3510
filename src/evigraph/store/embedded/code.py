"""Code structure in the embedded graph: the `GraphStore` code section for `EmbeddedStore`.

Symbols live in three node tables (Module, Class, Function), searched by the in-process BM25
index over their `search_text` (`bm25`, like passages and entities). The rules written for tables
that had a full-text index still hold here, as in `writes`: no MERGE, `concat(x, '')` on the
searched column, every relationship deleted by its own statement before a plain `DELETE` of its
node (see `writes.delete_chunks` for the crash replay this avoids), and struct fields projected to
plain variables before a node is matched on them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from evigraph.code_records import (
    EDGE_ENDS,
    LINK_TYPES,
    SYMBOL_KINDS,
    CodeChange,
    CodeGraph,
    CodeSymbol,
    SymbolKind,
    code_hit,
    kind_of,
    link_ends,
)
from evigraph.models import DEFAULT_WALK, EntityHit, GraphWalk, WalkBounds
from evigraph.store import bm25
from evigraph.store.bm25 import TextIndex
from evigraph.store.caches import Cached
from evigraph.store.core.code_rows import (
    REF_COLUMNS,
    SYMBOL_FIELDS,
    by_kind,
    contains_rows,
    count_code,
    edge_rows,
    mention_rows,
    read_code_graph,
    read_code_texts,
    symbol_from_row,
    symbol_row,
)
from evigraph.store.core.code_walk import explore_code
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.embedded.generation import bumping
from evigraph.store.embedded.reads import each_key

_TOUCHING: dict[SymbolKind, tuple[tuple[str, bool], ...]] = {
    kind: tuple(
        (rel, outgoing)
        for rel in LINK_TYPES
        for outgoing in (True, False)
        if any((a if outgoing else b) == kind for a, b in link_ends(rel))
    )
    for kind in SYMBOL_KINDS
}
"""(relationship, outgoing) pairs that can touch a node of each kind, deleted before the node."""


# -- reads -------------------------------------------------------------------------------------


def has_code_tables(tx: Tx) -> bool:
    """False on a file opened read-only from before code ingest, whose tables were never created."""
    return "Function" in {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}


def code_graph(tx: Tx) -> CodeGraph:
    if not has_code_tables(tx):
        return CodeGraph()
    return read_code_graph(lambda query: tx.rows(query))


def code_counts(tx: Tx) -> dict[str, int]:
    return count_code(lambda query: tx.rows(query)) if has_code_tables(tx) else {}


def count_symbols(tx: Tx) -> int:
    if not has_code_tables(tx):
        return 0
    return sum(int(tx.column(f"MATCH (n:{kind}) RETURN count(n)")[0]) for kind in SYMBOL_KINDS)


def code_texts(tx: Tx) -> list[tuple[str, str]]:
    """`read_code_texts` (the name is `TEXT_INDEXES`' key); none from a file without code tables."""
    return read_code_texts(lambda query: tx.rows(query)) if has_code_tables(tx) else []


def code_by_ids(tx: Tx, ids: Sequence[str]) -> list[EntityHit]:
    found: dict[str, EntityHit] = {}
    for kind, wanted in by_kind(ids).items():
        for row in each_key(tx, f"MATCH (n:{kind} {{id: $key}}) RETURN {SYMBOL_FIELDS}", wanted):
            found[row["id"]] = code_hit(symbol_from_row(kind, row))
    return [found[i] for i in ids if i in found]


def code_mentions(tx: Tx, ids: Sequence[str], per_symbol: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for sid in dict.fromkeys(ids):
        kind = kind_of(sid)
        if kind is None:
            continue
        rows = tx.column(
            f"MATCH (c:Chunk)-[:MENTIONS]->(:{kind} {{id: $id}}) RETURN c.id ORDER BY c.id LIMIT $k",
            {"id": sid, "k": per_symbol},
        )
        out += [(sid, cid) for cid in rows]
    return out


# -- writes ------------------------------------------------------------------------------------


def write_code(tx: Tx, change: CodeChange) -> None:
    """The whole change in the caller's transaction: a crash leaves the old code graph or the new."""
    repos = {r.id: {"id": r.id, "name": r.name, "root": r.root} for r in change.repos}
    tx.run_batched(
        "UNWIND $rows AS r WITH r.id AS id, r.name AS name, r.root AS root MERGE (x:Repo {id: id}) "
        "SET x.name = name, x.root = root",
        list(repos.values()),
    )
    _delete_symbols(tx, change.removed)
    for edge, rows in edge_rows(change.removed_edges).items():
        a, b = EDGE_ENDS[edge]
        tx.run_batched(
            f"UNWIND $rows AS r WITH r.s AS s, r.d AS d MATCH (:{a} {{id: s}})-[x:{edge}]->(:{b} {{id: d}}) DELETE x",
            rows,
        )
    _create_symbols(tx, change.symbols)
    for edge, rows in edge_rows(change.added_edges).items():
        a, b = EDGE_ENDS[edge]
        _link(tx, edge, a, b, rows)


def _delete_symbols(tx: Tx, ids: Sequence[str]) -> None:
    grouped = by_kind(ids)
    for kind, wanted in grouped.items():
        for rel, outgoing in _TOUCHING[kind]:
            pattern = f"(:{kind} {{id: sid}})-[x:{rel}]->()" if outgoing else f"()-[x:{rel}]->(:{kind} {{id: sid}})"
            tx.run_batched(f"UNWIND $rows AS sid MATCH {pattern} DELETE x", wanted)
    for kind, wanted in grouped.items():
        tx.run_batched(f"UNWIND $rows AS sid MATCH (n:{kind} {{id: sid}}) DELETE n", wanted)


def _create_symbols(tx: Tx, symbols: Sequence[CodeSymbol]) -> None:
    for kind in SYMBOL_KINDS:
        rows = [symbol_row(s) for s in symbols if s.kind == kind]
        extra = ", import_aliases: CAST(r.aliases AS STRING[]), content_hash: r.hash" if kind == "Module" else ""
        tx.run_batched(
            f"""UNWIND $rows AS r CREATE (:{kind} {{id: r.id, repo: r.repo, path: r.path, module: r.module,
                   name: r.name, qualname: r.qualname, language: r.language, signature: r.signature,
                   docstring: r.docstring, line_start: r.line_start, line_end: r.line_end,
                   {REF_COLUMNS[kind]}: CAST(r.refs AS STRING[]), search_text: concat(r.st, ''){extra}}})""",
            rows,
        )
    for (a, b), rows in contains_rows(symbols).items():
        _link(tx, "CONTAINS", a, b, rows)


def _link(tx: Tx, rel: str, a: str, b: str, rows: list[dict[str, str]]) -> None:
    """Edges appended by `COPY ... FROM (subquery)`, not `CREATE`: the engine gives a relationship
    table's first `CREATE`d edge a whole node group's adjacency, 2.1 MB however few edges follow
    (kuzu 0.11, measured with 1 to 3,000 edges on 10 to 60,000 nodes), and the code graph uses ten
    (from, to) pairs: ingesting this repository's 2.1 MB of source grew the file by 83 MB. A `COPY`
    sizes the adjacency to the edges it brings (100 edges: 0.29 MB a table, against 3.2 MB), also
    into a table that has edges, and is rolled back with the transaction like any write.

    LadybugDB 0.22 crashes (segfault) when that `COPY` runs with parameters a second time, and it
    does not have the quirk (one `CREATE`d edge among 60,000 nodes grew its file by 0.03 MB), so
    on LadybugDB the edges are created."""
    if tx.engine == "ladybug":
        tx.run_batched(
            f"""UNWIND $rows AS r WITH r.s AS s, r.d AS d MATCH (a:{a} {{id: s}}) WITH a, d
                MATCH (b:{b} {{id: d}}) CREATE (a)-[:{rel}]->(b)""",
            rows,
        )
        return
    tx.run_batched(
        f"""COPY {rel} FROM (UNWIND $rows AS r WITH r.s AS s, r.d AS d MATCH (a:{a} {{id: s}}) WITH a, d
            MATCH (b:{b} {{id: d}}) RETURN a.id, b.id) (from='{a}', to='{b}')""",
        rows,
    )


def link_mentions(tx: Tx, pairs: Sequence[tuple[str, str]]) -> None:
    for kind, rows in mention_rows(pairs).items():
        linked = {
            (r["s"], r["d"])
            for r in tx.rows(
                f"""UNWIND $rows AS r WITH r.s AS s, r.d AS d
                    MATCH (a:Chunk {{id: s}})-[:MENTIONS]->(b:{kind} {{id: d}}) RETURN a.id AS s, b.id AS d""",
                {"rows": rows},
            )
        }
        _link(tx, "MENTIONS", "Chunk", kind, [r for r in rows if (r["s"], r["d"]) not in linked])


# -- the store's section -----------------------------------------------------------------------


class EmbeddedCodeOps:
    """The code section of `EmbeddedStore`, kept apart so the store module stays a wiring."""

    _cache: Cached

    @property
    def executor(self) -> Executor:
        raise NotImplementedError  # EmbeddedStore's

    if TYPE_CHECKING:  # IndexOps's, a sibling section: not defined here, or they would hide its own

        async def _text_index(self, texts: Callable[[Tx], list[tuple[str, str]]]) -> TextIndex: ...

    async def code_graph(self) -> CodeGraph:
        return await self.executor.read(code_graph)

    async def write_code(self, change: CodeChange) -> None:
        if change.empty:
            return
        try:
            await self.executor.write(bumping(lambda tx: write_code(tx, change)))
        finally:
            self._cache.invalidate()

    async def search_code(self, query: str, limit: int = 10) -> list[EntityHit]:
        if not await self._holds_code():
            return []  # three index queries saved on every retrieve of a knowledge base without code
        return await bm25.search(await self._text_index(code_texts), query, limit, self.code_by_ids)

    async def code_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        if not ids or not await self._holds_code():
            return []
        return await self.executor.read(lambda tx: code_by_ids(tx, ids))

    async def code_mentions(self, symbol_ids: Sequence[str], per_symbol: int = 3) -> list[tuple[str, str]]:
        if not symbol_ids or not await self._holds_code():
            return []
        return await self.executor.read(lambda tx: code_mentions(tx, symbol_ids, per_symbol))

    async def explore_code(self, symbol_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        if not await self._holds_code():
            return GraphWalk(nodes=[], edges=[])
        return await self.executor.read(lambda tx: explore_code(tx.rows, symbol_id, bounds))

    async def link_code_mentions(self, pairs: Sequence[tuple[str, str]]) -> None:
        if pairs:
            await self.executor.write(lambda tx: link_mentions(tx, pairs))

    async def _holds_code(self) -> bool:
        count: int = await self._cache.fetch("code_symbols", lambda: self.executor.read_sync(count_symbols))
        return count > 0
