"""What a parser makes of one source file, before it has ids or a place in a repository.

Parsers of every language produce these, so resolution and the store never see a syntax tree.
Callee names are written in one form whatever the language: dotted attribute chains, `self` for
the receiver (`this` in TypeScript, a Go method's receiver variable), `()` after a call whose
result is used (`Retriever().search`, `super().__init__`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

MAX_SIGNATURE_CHARS = 400
"""A signature longer than this (a default holding a large literal) is cut: it is a label, not code."""
MAX_DOCSTRING_CHARS = 4000
MAX_REFS = 300
"""Callees recorded per function: a generated function calling thousands must not bloat its row."""


@dataclass
class ParsedSymbol:
    kind: Literal["Class", "Function"]
    name: str
    qualname: str
    parent: str | None
    """Qualname of the class or function containing this one; None at module level."""
    signature: str
    docstring: str
    line_start: int
    line_end: int
    refs: list[str] = field(default_factory=list)
    """A class's base classes, a function's callees, as written (aliases not applied)."""


@dataclass
class ParsedFile:
    language: str
    line_end: int
    docstring: str = ""
    module: str = ""
    """The module's name when the file declares it (a Java package and class), else '' and the
    name comes from the file's path (`files.module_name`)."""
    imports: list[tuple[str, str]] = field(default_factory=list)
    """(local name, target) per import: `np` -> `numpy`, `Store` -> `pkg.store.Store`."""
    symbols: list[ParsedSymbol] = field(default_factory=list)


class CodeParseError(Exception):
    """A file that does not parse: reported as the file's failure, the rest of the run goes on."""


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split()) if limit == MAX_SIGNATURE_CHARS else text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unique_qualnames(symbols: list[ParsedSymbol]) -> None:
    """Give a repeated qualname (a property's getter and setter, a conditional def) its line as a
    suffix, so every symbol of a module keeps its own id; children follow their renamed parent."""
    seen: set[str] = set()
    renamed: dict[str, str] = {}  # a repeated qualname -> its latest occurrence's new name
    for s in symbols:  # in source order: a symbol's children follow it
        if s.parent is not None and s.parent in renamed:
            s.parent = renamed[s.parent]
            s.qualname = f"{s.parent}.{s.name}"
        if s.qualname in seen:
            renamed[s.qualname] = s.qualname = f"{s.qualname}@{s.line_start}"
        seen.add(s.qualname)
