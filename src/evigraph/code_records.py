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
LinkKind = Literal["CONTAINS", "IMPORTS", "CALLS", "INHERITS", "MENTIONS"]

SYMBOL_KINDS: tuple[SymbolKind, ...] = ("Module", "Class", "Function")
EDGE_KINDS: tuple[EdgeKind, ...] = ("CALLS", "IMPORTS", "INHERITS")
_KINDS: dict[str, SymbolKind] = {k: k for k in SYMBOL_KINDS}

CODE_LABELS: tuple[str, ...] = ("Repo", *SYMBOL_KINDS)
"""Every node table of the code graph: the repositories, then the symbols."""

CODE_LINKS: tuple[tuple[LinkKind, str, str], ...] = (
    ("CONTAINS", "Repo", "Module"),
    ("CONTAINS", "Module", "Class"),
    ("CONTAINS", "Module", "Function"),
    ("CONTAINS", "Class", "Class"),
    ("CONTAINS", "Class", "Function"),
    ("CONTAINS", "Function", "Function"),
    ("CONTAINS", "Function", "Class"),
    ("IMPORTS", "Module", "Module"),
    ("CALLS", "Function", "Function"),
    ("INHERITS", "Class", "Class"),
    ("MENTIONS", "Chunk", "Module"),
    ("MENTIONS", "Chunk", "Class"),
    ("MENTIONS", "Chunk", "Function"),
)
"""Every relationship of the code graph as (type, from label, to label): the one list the stores'
schemas, the Cypher guide, the agents' instructions and the walks around a symbol are made from.
CONTAINS is the nesting (a repository's modules, a module's or class's definitions, nested ones);
MENTIONS joins a document's passage to a symbol it names."""

LINK_TYPES: tuple[LinkKind, ...] = tuple(dict.fromkeys(kind for kind, _, _ in CODE_LINKS))

SYMBOL_LINKS: tuple[tuple[LinkKind, SymbolKind, SymbolKind], ...] = tuple(
    (kind, _KINDS[a], _KINDS[b]) for kind, a, b in CODE_LINKS if a in _KINDS and b in _KINDS
)
"""The relationships joining two symbols: what a walk around a symbol follows (`GraphStore.explore_code`)."""
SYMBOL_LINK_TYPES: tuple[LinkKind, ...] = tuple(dict.fromkeys(kind for kind, _, _ in SYMBOL_LINKS))

EDGE_ENDS: dict[EdgeKind, tuple[SymbolKind, SymbolKind]] = {
    kind: (_KINDS[a], _KINDS[b]) for kind, a, b in CODE_LINKS if kind in EDGE_KINDS
}
"""The node kinds each derived edge joins: one pair each, so a query never guesses the labels."""


CODE_QUERIES: tuple[tuple[str, str], ...] = (
    (
        "callers of a function",
        "MATCH (f:Function)-[:CALLS]->(g:Function) WHERE g.qualname = 'Retriever.search' RETURN f.module, f.qualname",
    ),
    (
        "classes in a module",
        "MATCH (m:Module)-[:CONTAINS]->(c:Class) WHERE m.name = 'pkg.kb' RETURN c.qualname, c.line_start",
    ),
    ("what a module imports", "MATCH (m:Module)-[:IMPORTS]->(x:Module) WHERE m.name = 'pkg.kb' RETURN x.name"),
    (
        "subclasses",
        "MATCH (c:Class)-[:INHERITS*1..3]->(b:Class {name: 'Base'}) RETURN c.module, c.qualname",
    ),
)
"""Structural questions and the one Cypher query answering each, as the guide and the agents'
instructions show them (`Retriever.search`, `pkg.kb` and `Base` stand for the names asked about)."""


def link_ends(kind: LinkKind) -> list[tuple[str, str]]:
    """The (from label, to label) pairs a relationship of the code graph joins."""
    return [(a, b) for k, a, b in CODE_LINKS if k == kind]


def link_shape(kind: LinkKind) -> str:
    """A relationship's ends as a guide writes them: a pattern to copy when it joins one pair of
    labels (`(:Function)-[:CALLS]->(:Function)`), else each source with its targets
    (`[:CONTAINS] (Repo->Module, Module->Class|Function, ...)`), since engines disagree on how a
    pattern names one of several labels."""
    pairs = link_ends(kind)
    if len(pairs) == 1:
        return f"(:{pairs[0][0]})-[:{kind}]->(:{pairs[0][1]})"
    targets: dict[str, list[str]] = {}
    for a, b in pairs:
        targets.setdefault(a, []).append(b)
    return f"[:{kind}] (" + ", ".join(f"{a}->{'|'.join(bs)}" for a, bs in targets.items()) + ")"


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


def symbol_name(kind: SymbolKind, name: str, module: str, qualname: str) -> str:
    """The name a symbol is shown by: a module's dotted name, else its module's and its own dotted
    name inside it (`pkg.mod.Class.method`)."""
    return name if kind == "Module" else f"{module}.{qualname}"


def code_hit(symbol: CodeSymbol, score: float = 0.0) -> EntityHit:
    """A symbol as entity search returns it: label is its kind, the description says where it is."""
    name = symbol_name(symbol.kind, symbol.name, symbol.module, symbol.qualname)
    return EntityHit(id=symbol.id, name=name, label=symbol.kind, description=symbol_description(symbol), score=score)
