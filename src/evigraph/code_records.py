"""Code structure as the store holds it: repositories, modules, classes, functions and their edges.

Shared by the code ingest (`evigraph.ingest.code`), which builds these from source files, and the
stores, which write and read them, so neither imports the other. Only structure is recorded:
names, signatures, docstrings and line ranges, never a function's body; an agent that needs the
body reads `path` from `line_start` to `line_end`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from evigraph.models import EntityHit

SymbolKind = Literal["Module", "Class", "Function"]
EdgeKind = Literal["CALLS", "IMPORTS", "INHERITS"]

SYMBOL_KINDS: tuple[SymbolKind, ...] = ("Module", "Class", "Function")
EDGE_KINDS: tuple[EdgeKind, ...] = ("CALLS", "IMPORTS", "INHERITS")
_KINDS: dict[str, SymbolKind] = {k: k for k in SYMBOL_KINDS}
EDGE_ENDS: dict[EdgeKind, tuple[SymbolKind, SymbolKind]] = {
    "CALLS": ("Function", "Function"),
    "IMPORTS": ("Module", "Module"),
    "INHERITS": ("Class", "Class"),
}
"""The node kinds each derived edge joins: one pair each, so a query never guesses the labels."""


def repo_id(name: str) -> str:
    return f"Repo:{name}"


def module_id(repo: str, path: str) -> str:
    """A module's id: its repository's name and its path relative to the repository root."""
    return f"Module:{repo}:{path}"


def member_id(kind: SymbolKind, repo: str, path: str, qualname: str) -> str:
    """A class's or function's id: its module's path, then its dotted name inside the module."""
    return f"{kind}:{repo}:{path}#{qualname}"


def kind_of(symbol_id: str) -> SymbolKind | None:
    """The node kind an id names, read from its prefix; None for an id that is no code symbol's."""
    return _KINDS.get(symbol_id.split(":", 1)[0])


class CodeRepo(BaseModel):
    """One repository (a folder given to `ingest_code`, or the git work tree holding it)."""

    id: str
    name: str
    root: str = Field(description="absolute path of the repository root on the machine that ingested it")


class CodeSymbol(BaseModel):
    """A module, class or function: a node of the code graph.

    `refs` are the raw names resolution reads, kept so that a module changed later can be linked
    again without parsing its unchanged neighbours: a module's imported targets (aligned with
    `aliases`, the local names they are bound to), a class's base classes, a function's callees
    as written (`self.store.search`, `Retriever().run`), aliases of the module not yet applied.
    """

    id: str
    kind: SymbolKind
    repo: str = Field(description="repository id")
    path: str = Field(description="file path relative to the repository root, posix")
    module: str = Field(description="the dotted (or package) name of the module the symbol is in")
    name: str = Field(description="the symbol's own name; a module's is its dotted name")
    qualname: str = Field(description="dotted name inside the module (Class.method); a module's dotted name")
    parent: str = Field(description="id of the node that CONTAINS this one (a module's parent is its Repo)")
    language: str = ""
    signature: str = ""
    docstring: str = ""
    line_start: int = 1
    line_end: int = 1
    refs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    content_hash: str = Field("", description="a module's source hash, for incremental re-ingest")


class CodeEdge(BaseModel, frozen=True):
    """A derived edge between two symbols: resolution of a call, an import or a base class."""

    kind: EdgeKind
    source: str
    target: str


class CodeGraph(BaseModel):
    """Everything the store holds of code: what resolution and incremental re-ingest read."""

    repos: list[CodeRepo] = Field(default_factory=list)
    symbols: list[CodeSymbol] = Field(default_factory=list)
    edges: list[CodeEdge] = Field(default_factory=list)


class CodeChange(BaseModel):
    """One ingest's change to the code graph, written in one step where the engine allows it.

    `removed` symbols go with every edge touching them (a changed module's old nodes are removed
    and its new ones added); `symbols` are created with their CONTAINS edge from `parent`, which
    is created before them or exists; `removed_edges` and `added_edges` are the derived edges
    that changed elsewhere.
    """

    repos: list[CodeRepo] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    symbols: list[CodeSymbol] = Field(default_factory=list)
    removed_edges: list[CodeEdge] = Field(default_factory=list)
    added_edges: list[CodeEdge] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.repos or self.removed or self.symbols or self.removed_edges or self.added_edges)


def symbol_description(symbol: CodeSymbol) -> str:
    """A symbol as search results describe it: where it is, its signature, its docstring's first line."""
    where = f"{symbol.path}:{symbol.line_start}-{symbol.line_end}"
    summary = symbol.docstring.strip().split("\n", 1)[0] if symbol.docstring else ""
    return " — ".join(p for p in (symbol.signature or symbol.qualname, summary, where) if p)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifier_words(text: str) -> str:
    """The words inside identifiers (`retry_policy`, `RetryPolicy` -> `retry policy`), so a question
    in plain words finds a symbol named in code's spelling."""
    words = []
    for ident in _IDENT.findall(text):
        words += [w for part in ident.split("_") for w in _CAMEL.split(part) if w]
    return " ".join(words)


def symbol_search_text(symbol: CodeSymbol) -> str:
    """What full-text search matches for a symbol: its names as written and split into words, its
    signature and its docstring. Stores put it in their own index form."""
    names = f"{symbol.qualname} {symbol.path}"
    return " ".join((names, identifier_words(names), symbol.signature, symbol.docstring))


def code_hit(symbol: CodeSymbol, score: float = 0.0) -> EntityHit:
    """A symbol as entity search returns it: label is its kind, the description says where it is."""
    name = symbol.name if symbol.kind == "Module" else f"{symbol.module}.{symbol.qualname}"
    return EntityHit(id=symbol.id, name=name, label=symbol.kind, description=symbol_description(symbol), score=score)
