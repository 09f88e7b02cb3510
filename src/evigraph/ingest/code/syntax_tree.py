"""Reading a tree-sitter syntax tree: the few things every language's walker asks of a node."""

from __future__ import annotations

from typing import Any

from evigraph.ingest.code.parsed import MAX_DOCSTRING_CHARS, CodeParseError, clip

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


def leading_comment(node: Node, source: bytes) -> str:
    """The comment block right above a declaration (a `/** */` doc or `//` lines), markers removed.

    A declaration wrapped in `export` has its comment above the wrapper, so that is read too.
    """
    anchor = node.parent if node.parent is not None and node.parent.type == "export_statement" else node
    found: list[str] = []
    prev = anchor.prev_sibling
    top = anchor.start_point[0]
    while prev is not None and prev.type == "comment" and prev.end_point[0] >= top - 1:
        found.insert(0, text(prev, source))
        top = prev.start_point[0]
        prev = prev.prev_sibling
    cleaned = []
    for block in found:
        for line in block.splitlines():
            line = line.strip()
            for marker in ("/**", "/*", "*/", "///", "//", "*"):
                if line.startswith(marker):
                    line = line[len(marker) :]
            line = line.removesuffix("*/").strip()
            cleaned.append(line)
    return clip("\n".join(cleaned).strip(), MAX_DOCSTRING_CHARS)


def signature_before(node: Node, body: Node | None, source: bytes) -> str:
    """A declaration's text up to its body: the signature as written, without the body."""
    end = body.start_byte if body is not None else node.end_byte
    return source[node.start_byte : end].decode("utf-8", "replace").strip()
