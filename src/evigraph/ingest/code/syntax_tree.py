"""Reading a tree-sitter syntax tree: the few things every language's walker asks of a node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from evigraph.ingest.code.parsed import (
    MAX_DOCSTRING_CHARS,
    MAX_REFS,
    MAX_SIGNATURE_CHARS,
    CodeParseError,
    ParsedSymbol,
    clip,
)

Node = Any
"""A `tree_sitter.Node`; typed loosely as the grammar packages ship no stubs for its fields."""


def text(node: Node | None, source: bytes) -> str:
    return "" if node is None else source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def lines(node: Node) -> tuple[int, int]:
    return node.start_point[0] + 1, node.end_point[0] + 1


def parse_tree(parser: Any, source: bytes, language: str) -> Node:
    """The root node, or `CodeParseError` at the first place the grammar could not read."""
    root = parser.parse(source).root_node
    if root.has_error:
        bad = _first_error(root)
        where = f" at line {bad.start_point[0] + 1}" if bad is not None else ""
        raise CodeParseError(f"{language} syntax error{where}")
    return root


def _first_error(node: Node) -> Node | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "ERROR" or current.is_missing:
            return current
        stack.extend(reversed([c for c in current.children if c.has_error or c.is_missing]))
    return None


_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
"""Comment node types: `comment` in TypeScript and Go, line and block comments in Rust and Java."""
_BETWEEN = frozenset({"attribute_item"})
"""Nodes that may stand between a doc comment and its item: Rust's `#[derive(...)]`."""


def leading_comment(node: Node, source: bytes, doc: tuple[str, ...] = ()) -> str:
    """The comment block right above a declaration (a `/** */` doc or `//` lines), markers removed.

    A declaration wrapped in `export` has its comment above the wrapper, so that is read too.
    `doc` keeps only comments starting with one of these markers (Rust's `///`, Javadoc's `/**`),
    where a plain comment above an item is not its documentation.
    """
    anchor = node.parent if node.parent is not None and node.parent.type == "export_statement" else node
    found: list[str] = []
    prev = anchor.prev_sibling
    top = anchor.start_point[0]
    while prev is not None and prev.type in _COMMENTS | _BETWEEN and prev.end_point[0] >= top - 1:
        if prev.type in _COMMENTS:
            block = text(prev, source)
            if doc and not block.startswith(doc):
                break
            found.insert(0, block)
        top = prev.start_point[0]
        prev = prev.prev_sibling
    return comment_text(found)


def comment_text(blocks: list[str]) -> str:
    """Comments as prose: the markers of every line (`/**`, `*`, `///`, `//!`, ...) removed."""
    cleaned = []
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            for marker in ("/**", "/*", "*/", "///", "//!", "//", "*"):
                if line.startswith(marker):
                    line = line[len(marker) :]
            line = line.removesuffix("*/").strip()
            cleaned.append(line)
    return clip("\n".join(cleaned).strip(), MAX_DOCSTRING_CHARS)


def calls_in(body: Node, callee: Callable[[Node], str]) -> list[str]:
    """The callees of a body in source order, each once, at most `MAX_REFS`: `callee` names the
    callee of a node that is a call and returns '' for any other node (or a call of nothing named)."""
    found: dict[str, None] = {}
    stack = [body]
    while stack and len(found) < MAX_REFS:
        node = stack.pop()
        name = callee(node)
        if name:
            found.setdefault(name)
        stack.extend(reversed(node.named_children))
    return list(found)


def signature_before(node: Node, body: Node | None, source: bytes) -> str:
    """A declaration's text up to its body: the signature as written, without the body."""
    end = body.start_byte if body is not None else node.end_byte
    return source[node.start_byte : end].decode("utf-8", "replace").strip()


def declaration(
    kind: Literal["Class", "Function"],
    node: Node,
    body: Node | None,
    source: bytes,
    name: str,
    qualname: str,
    parent: str | None,
    refs: list[str],
    *,
    doc: tuple[str, ...] = (),
    trim: str = "",
) -> ParsedSymbol:
    """A declaration as a symbol, read alike in every language: its lines, its text up to the body
    as the signature (less the characters in `trim`: a prototype's `;`, an arrow's `=>`), and the
    comment above it (`doc` as for `leading_comment`) as its documentation."""
    start, end = lines(node)
    signature = clip(signature_before(node, body, source).rstrip(trim), MAX_SIGNATURE_CHARS)
    return ParsedSymbol(kind, name, qualname, parent, signature, leading_comment(node, source, doc), start, end, refs)
