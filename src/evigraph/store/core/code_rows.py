"""`code_rows`: code symbols and edges as the parameter rows both stores write, and back.

Both stores hold the same labels and properties (`store/embedded/schema.py`), so the columns a
read returns, the rows a write sends and how ids group by node table are defined once here; each
store keeps only its own statements.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from evigraph.code_records import (
    CODE_LABELS,
    EDGE_ENDS,
    SYMBOL_KINDS,
    CodeEdge,
    CodeGraph,
    CodeRepo,
    CodeSymbol,
    EdgeKind,
    SymbolKind,
    kind_of,
    symbol_search_text,
)
from evigraph.store.search_text import fts_text

REF_COLUMNS: dict[SymbolKind, str] = {"Module": "imports", "Class": "bases", "Function": "calls"}
"""The list property holding each kind's raw refs (`CodeSymbol.refs`)."""

SYMBOL_FIELDS = (
    "n.id AS id, n.repo AS repo, n.path AS path, n.module AS module, n.name AS name, n.qualname AS qualname, "
    "n.language AS language, n.signature AS signature, n.docstring AS docstring, n.line_start AS line_start, "
    "n.line_end AS line_end"
)
"""The columns a symbol read returns (node variable `n`), as `symbol_from_row` reads them."""


def graph_fields(kind: SymbolKind) -> str:
    """`SYMBOL_FIELDS` with the refs (and a module's aliases and hash) that `code_graph` needs."""
    extra = f", n.{REF_COLUMNS[kind]} AS refs"
    if kind == "Module":
        extra += ", n.import_aliases AS aliases, n.content_hash AS content_hash"
    return SYMBOL_FIELDS + extra


def symbol_from_row(kind: SymbolKind, row: dict[str, Any], parent: str = "") -> CodeSymbol:
    return CodeSymbol(
        id=row["id"],
        kind=kind,
        repo=row["repo"] or "",
        path=row["path"] or "",
        module=row["module"] or "",
        name=row["name"] or "",
        qualname=row["qualname"] or "",
        parent=parent,
        language=row["language"] or "",
        signature=row["signature"] or "",
        docstring=row["docstring"] or "",
        line_start=int(row["line_start"] or 1),
        line_end=int(row["line_end"] or 1),
        refs=tuple(row.get("refs") or ()),
        aliases=tuple(row.get("aliases") or ()),
        content_hash=row.get("content_hash") or "",
    )


def symbol_row(s: CodeSymbol) -> dict[str, Any]:
    """A symbol as a write's parameter row; `st` is its full-text column in the index's spelling."""
    return {
        **s.model_dump(include={"id", "repo", "path", "module", "name", "qualname", "language", "signature"}),
        **s.model_dump(include={"docstring", "line_start", "line_end"}),
        "refs": list(s.refs),
        "aliases": list(s.aliases),
        "hash": s.content_hash,
        "st": fts_text(symbol_search_text(s)),
    }


def by_kind(ids: Sequence[str]) -> dict[SymbolKind, list[str]]:
    """Symbol ids grouped by the node table their prefix names, each once, in the order given."""
    grouped: dict[SymbolKind, list[str]] = defaultdict(list)
    for sid in dict.fromkeys(ids):
        kind = kind_of(sid)
        if kind is not None:
            grouped[kind].append(sid)
    return grouped


def edge_rows(edges: Sequence[CodeEdge]) -> dict[EdgeKind, list[dict[str, str]]]:
    """Edge kind -> (source, target) rows `s`, `d`, each edge once."""
    grouped: dict[EdgeKind, list[dict[str, str]]] = defaultdict(list)
    for e in dict.fromkeys(edges):
        grouped[e.kind].append({"s": e.source, "d": e.target})
    return grouped


def contains_rows(symbols: Sequence[CodeSymbol]) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(parent table, child table) -> CONTAINS rows for new symbols."""
    grouped: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for s in symbols:
        parent = "Repo" if s.parent.startswith("Repo:") else kind_of(s.parent)
        if parent is not None:
            grouped[(parent, s.kind)].append({"s": s.parent, "d": s.id})
    return grouped


def mention_rows(pairs: Sequence[tuple[str, str]]) -> dict[SymbolKind, list[dict[str, str]]]:
    """(chunk id, symbol id) pairs as MENTIONS rows grouped by the symbol's table, each pair once."""
    grouped: dict[SymbolKind, list[dict[str, str]]] = defaultdict(list)
    for cid, sid in dict.fromkeys(pairs):
        kind = kind_of(sid)
        if kind is not None:
            grouped[kind].append({"s": cid, "d": sid})
    return grouped


def read_code_graph(rows: Callable[[str], list[dict[str, Any]]]) -> CodeGraph:
    """The whole code graph through a store's read (`rows(query)`): repositories, symbols with their
    parents (from CONTAINS), and the derived edges. The queries are plain Cypher both engines run."""
    graph = CodeGraph(
        repos=[CodeRepo(**r) for r in rows("MATCH (r:Repo) RETURN r.id AS id, r.name AS name, r.root AS root")]
    )
    parents = {r["c"]: r["p"] for r in rows("MATCH (p)-[:CONTAINS]->(c) RETURN p.id AS p, c.id AS c")}
    for kind in SYMBOL_KINDS:
        for row in rows(f"MATCH (n:{kind}) RETURN {graph_fields(kind)}"):
            graph.symbols.append(symbol_from_row(kind, row, parents.get(row["id"], "")))
    for edge, (a, b) in EDGE_ENDS.items():
        for row in rows(f"MATCH (a:{a})-[:{edge}]->(b:{b}) RETURN a.id AS s, b.id AS d"):
            graph.edges.append(CodeEdge(kind=edge, source=row["s"], target=row["d"]))
    return graph


def read_code_texts(rows: Callable[[str], list[dict[str, Any]]]) -> list[tuple[str, str]]:
    """Every code symbol's id and full-text column, for the code search index (`bm25`)."""
    return [
        (r["id"], r["st"] or "")
        for kind in SYMBOL_KINDS
        for r in rows(f"MATCH (n:{kind}) RETURN n.id AS id, n.search_text AS st")
    ]


def count_code(rows: Callable[[str], list[dict[str, Any]]]) -> dict[str, int]:
    """Nodes per code table (`StoreCounts.code`), every table named; empty when there are none."""
    counts = {label: int(rows(f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"]) for label in CODE_LABELS}
    return counts if any(counts.values()) else {}
