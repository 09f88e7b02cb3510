"""Code structure on a FalkorDB graph: the `GraphStore` code section for `FalkorStore`.

The labels, properties and edges are the embedded store's (`store/embedded/code.py`), so an
agent's Cypher reads the same on both. The server runs each query whole but has no transaction
across queries, so `write_code` orders its queries to leave a state the next ingest repairs: the
old nodes go first, then the new ones, then the derived edges, and last the new modules' content
hashes. A run that dies part-way leaves modules with no hash, which the next ingest reads as
changed and writes again; the derived edges are diffed against the whole graph on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evigraph.code_records import (
    EDGE_ENDS,
    SYMBOL_KINDS,
    CodeChange,
    CodeGraph,
    CodeSymbol,
    code_hit,
)
from evigraph.models import DEFAULT_WALK, EntityHit, GraphWalk, WalkBounds
from evigraph.store import bm25
from evigraph.store.bm25 import TextIndex
from evigraph.store.core.code_rows import (
    REF_COLUMNS,
    SYMBOL_FIELDS,
    by_kind,
    contains_rows,
    edge_rows,
    mention_rows,
    read_code_graph,
    read_code_texts,
    symbol_from_row,
    symbol_row,
)
from evigraph.store.core.code_walk import explore_code
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.section import FalkorSection


def code_graph(conn: Connection) -> CodeGraph:
    return read_code_graph(lambda query: conn.read_sync(query))


def code_texts(conn: Connection) -> list[tuple[str, str]]:
    """`read_code_texts` (the name is `TEXT_INDEXES`' key)."""
    return read_code_texts(lambda query: conn.read_sync(query))


def code_by_ids(conn: Connection, ids: Sequence[str]) -> list[EntityHit]:
    found: dict[str, EntityHit] = {}
    for kind, wanted in by_kind(ids).items():
        for row in conn.read_sync(
            f"UNWIND $ids AS i MATCH (n:{kind} {{id: i}}) RETURN {SYMBOL_FIELDS}", {"ids": wanted}
        ):
            found[row["id"]] = code_hit(symbol_from_row(kind, row))
    return [found[i] for i in ids if i in found]


def code_mentions(conn: Connection, ids: Sequence[str], per_symbol: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for kind, wanted in by_kind(ids).items():
        rows = conn.read_sync(
            f"""UNWIND $ids AS i MATCH (c:Chunk)-[:MENTIONS]->(n:{kind} {{id: i}}) WHERE c.live
                WITH n.id AS sid, c.id AS cid ORDER BY cid
                WITH sid, collect(cid) AS cids RETURN sid, cids[0..$k] AS cids""",
            {"ids": wanted, "k": per_symbol},
        )
        got = {r["sid"]: list(r["cids"]) for r in rows}
        out += [(sid, cid) for sid in wanted for cid in got.get(sid, [])]
    order = {sid: i for i, sid in enumerate(dict.fromkeys(ids))}
    return sorted(out, key=lambda p: order[p[0]])


def write_code(conn: Connection, change: CodeChange) -> None:
    repos = {r.id: {"id": r.id, "name": r.name, "root": r.root} for r in change.repos}
    if repos:
        conn.write_sync(
            "UNWIND $rows AS r MERGE (x:Repo {id: r.id}) SET x.name = r.name, x.root = r.root",
            {"rows": list(repos.values())},
        )
    for kind, wanted in by_kind(change.removed).items():
        conn.write_many(f"UNWIND $rows AS i MATCH (n:{kind} {{id: i}}) DETACH DELETE n", wanted)
    for edge, rows in edge_rows(change.removed_edges).items():
        a, b = EDGE_ENDS[edge]
        conn.write_many(f"UNWIND $rows AS r MATCH (:{a} {{id: r.s}})-[x:{edge}]->(:{b} {{id: r.d}}) DELETE x", rows)
    _create_symbols(conn, change.symbols)
    for edge, rows in edge_rows(change.added_edges).items():
        a, b = EDGE_ENDS[edge]
        _link(conn, edge, a, b, rows)
    hashes = [{"id": s.id, "hash": s.content_hash} for s in change.symbols if s.kind == "Module"]
    conn.write_many("UNWIND $rows AS r MATCH (m:Module {id: r.id}) SET m.content_hash = r.hash", hashes)


def _create_symbols(conn: Connection, symbols: Sequence[CodeSymbol]) -> None:
    for kind in SYMBOL_KINDS:
        rows = [symbol_row(s) for s in symbols if s.kind == kind]
        extra = ", import_aliases: r.aliases, content_hash: ''" if kind == "Module" else ""
        conn.write_many(
            f"""UNWIND $rows AS r CREATE (:{kind} {{id: r.id, repo: r.repo, path: r.path, module: r.module,
                   name: r.name, qualname: r.qualname, language: r.language, signature: r.signature,
                   docstring: r.docstring, line_start: r.line_start, line_end: r.line_end,
                   {REF_COLUMNS[kind]}: r.refs, search_text: r.st{extra}}})""",
            rows,
        )
    for (a, b), rows in contains_rows(symbols).items():
        _link(conn, "CONTAINS", a, b, rows)


def _link(conn: Connection, rel: str, a: str, b: str, rows: list[dict[str, str]]) -> None:
    conn.write_many(
        f"UNWIND $rows AS r MATCH (a:{a} {{id: r.s}}) MATCH (b:{b} {{id: r.d}}) CREATE (a)-[:{rel}]->(b)", rows
    )


def link_mentions(conn: Connection, pairs: Sequence[tuple[str, str]]) -> None:
    for kind, rows in mention_rows(pairs).items():
        conn.write_many(
            f"UNWIND $rows AS r MATCH (a:Chunk {{id: r.s}}) MATCH (b:{kind} {{id: r.d}}) MERGE (a)-[:MENTIONS]->(b)",
            rows,
        )


class FalkorCodeOps(FalkorSection):
    """The code section of `FalkorStore`."""

    async def _text_index(self, texts: Callable[[Connection], list[tuple[str, str]]]) -> TextIndex:
        raise NotImplementedError  # FalkorStore's

    async def code_graph(self) -> CodeGraph:
        return await self._read(lambda: code_graph(self.conn))

    async def write_code(self, change: CodeChange) -> None:
        if not change.empty:
            await self._write(lambda: write_code(self.conn, change))

    async def search_code(self, query: str, limit: int = 10) -> list[EntityHit]:
        if not await self._holds_code():
            return []
        return await bm25.search(await self._text_index(code_texts), query, limit, self.code_by_ids)

    async def code_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        return await self._read(lambda: code_by_ids(self.conn, ids)) if ids else []

    async def code_mentions(self, symbol_ids: Sequence[str], per_symbol: int = 3) -> list[tuple[str, str]]:
        if not symbol_ids or not await self._holds_code():
            return []
        return await self._read(lambda: code_mentions(self.conn, symbol_ids, per_symbol))

    async def explore_code(self, symbol_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        if not await self._holds_code():
            return GraphWalk(nodes=[], edges=[])
        return await self._read(lambda: explore_code(self.conn.read_sync, symbol_id, bounds))

    async def link_code_mentions(self, pairs: Sequence[tuple[str, str]]) -> None:
        if pairs:
            await self._write(lambda: link_mentions(self.conn, pairs))

    async def _holds_code(self) -> bool:
        def count() -> int:
            rows = self.conn.read_sync("MATCH (n:Function) RETURN count(n) AS n")
            rows += self.conn.read_sync("MATCH (n:Module) RETURN count(n) AS n")
            return sum(int(r["n"]) for r in rows)

        found: int = await self.cache.fetch("code_symbols", count)
        return found > 0
