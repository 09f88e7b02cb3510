"""Rust files through the tree-sitter Rust grammar.

A module is named by its path within the crate (`src/store/db.rs` -> `crate::store::db`; `mod.rs`
names its folder, `lib.rs` and `main.rs` are `crate`), as `use crate::...` spells it; the resolver
reads `::` as it reads `.`. `use` paths starting `self::` or `super::` are made absolute here, and
`mod x;` imports `x` under the module. Structs, enums, unions and traits are classes; a method
belongs to its `impl`'s type (`Store.save`), and `impl Trait for Type` makes the trait a base of
the type when the type is declared in the same file, as a trait's default methods are then the
type's. `self` and `Self` are written `self` in callee names. Items inside an inline `mod x { }`,
and functions nested in function bodies, are not read.
"""

from __future__ import annotations

import posixpath

from evigraph.ingest.code.grammars import parser_for
from evigraph.ingest.code.parsed import ParsedFile, ParsedSymbol, unique_qualnames
from evigraph.ingest.code.syntax_tree import Node, calls_in, comment_text, declaration, parse_tree, text

_TYPES = frozenset({"struct_item", "enum_item", "union_item", "trait_item"})
_DOC = ("///", "/**")
_ROOTS = frozenset({"lib", "main", "mod"})
"""File stems that name their folder's module rather than one of their own."""


def rust_module(path: str) -> str:
    """`src/a/b.rs` -> `crate::a::b`; `src/a/mod.rs` -> `crate::a`; `src/lib.rs` -> `crate`.

    The path is taken below its last `src/` folder (a workspace member's `crates/x/src/...` too);
    a file outside any (`tests/api.rs`) is named by its whole path.
    """
    parts = posixpath.splitext(path)[0].split("/")
    if "src" in parts[:-1]:
        parts = ["crate", *parts[len(parts) - 1 - parts[::-1].index("src") + 1 :]]
    if len(parts) > 1 and parts[-1] in _ROOTS:
        parts.pop()
    return "::".join(parts)


def parse_rust(source: bytes, module: str) -> ParsedFile:
    root = parse_tree(parser_for("rust"), source, "rust")
    parsed = ParsedFile(language="rust", line_end=max(1, root.end_point[0] + 1))
    inner = []
    for node in root.named_children:
        if node.type != "line_comment" or not text(node, source).startswith("//!"):
            break
        inner.append(text(node, source))
    parsed.docstring = comment_text(inner)
    walker = _Walker(source, module, parsed)
    for node in root.named_children:  # types first, so an `impl` above its type still finds it
        if node.type in _TYPES:
            walker.type(node)
    for node in root.named_children:
        walker.item(node)
    unique_qualnames(parsed.symbols)
    return parsed


class _Walker:
    def __init__(self, source: bytes, module: str, parsed: ParsedFile) -> None:
        self.source, self.module, self.parsed = source, module, parsed
        self.classes: dict[str, ParsedSymbol] = {}

    def item(self, node: Node) -> None:
        kind = node.type
        if kind == "use_declaration":
            self.use(node.child_by_field_name("argument"), "")
        elif kind == "mod_item" and node.child_by_field_name("body") is None:
            name = text(node.child_by_field_name("name"), self.source)
            self.parsed.imports.append((name, f"{self.module}::{name}"))
        elif kind == "function_item":
            self.function(node, "", None)
        elif kind == "impl_item":
            self.impl(node)

    def use(self, node: Node | None, prefix: str) -> None:
        """One `use` tree: `a::b`, `a::b as c`, `a::{b, c::d}`, `a::*`; `prefix` is the path above it."""
        if node is None:
            return
        kind = node.type
        if kind == "scoped_use_list":
            inner = self.path(text(node.child_by_field_name("path"), self.source), prefix)
            for child in node.child_by_field_name("list").named_children:
                self.use(child, inner)
        elif kind == "use_list":
            for child in node.named_children:
                self.use(child, prefix)
        elif kind == "use_as_clause":
            target = self.path(text(node.child_by_field_name("path"), self.source), prefix)
            self.parsed.imports.append((text(node.child_by_field_name("alias"), self.source), target))
        elif kind == "use_wildcard":
            target = self.path(text(node, self.source).removesuffix("*").removesuffix("::"), prefix)
            self.parsed.imports.append((target, target))  # `use a::*`: binds no one name
        elif kind in ("identifier", "scoped_identifier", "self", "crate", "super"):
            written = text(node, self.source)
            target = self.path(written, prefix)
            alias = prefix.rsplit("::", 1)[-1] if written == "self" else written.rsplit("::", 1)[-1]
            self.parsed.imports.append((alias, target))

    def path(self, written: str, prefix: str) -> str:
        """A path as absolute as this file can make it: `self::`/`super::` replaced by the module."""
        if prefix:
            return prefix if written == "self" else f"{prefix}::{written}"
        head, _, rest = written.partition("::")
        if head not in ("self", "super"):
            return written
        base = self.module if head == "self" else self.module.rpartition("::")[0] or self.module
        return f"{base}::{rest}" if rest else base

    def type(self, node: Node) -> None:
        name = text(node.child_by_field_name("name"), self.source)
        body = node.child_by_field_name("body")
        bases = []
        if node.type == "trait_item":  # `trait A: B + C`: the supertraits are its bases
            bounds = node.child_by_field_name("bounds")
            bases = [self.type_name(b) for b in bounds.named_children] if bounds is not None else []
        symbol = declaration("Class", node, body, self.source, name, name, None, [b for b in bases if b], doc=_DOC)
        self.classes[name] = symbol
        self.parsed.symbols.append(symbol)
        if node.type == "trait_item" and body is not None:
            for member in body.named_children:
                if member.type in ("function_item", "function_signature_item"):
                    self.function(member, name, name)

    def impl(self, node: Node) -> None:
        owner = self.type_name(node.child_by_field_name("type"))
        trait = self.type_name(node.child_by_field_name("trait"))
        if trait and owner in self.classes:
            self.classes[owner].refs.append(trait)
        body = node.child_by_field_name("body")
        for member in body.named_children if body is not None else ():
            if member.type == "function_item":
                self.function(member, owner, owner if owner in self.classes else None)

    def type_name(self, node: Node | None) -> str:
        """`Store`, `store::Store`, `Store<T>` as a path; '' for a type with none (`&T`, a tuple)."""
        if node is None:
            return ""
        if node.type == "generic_type":
            return self.type_name(node.child_by_field_name("type"))
        if node.type in ("type_identifier", "scoped_type_identifier"):
            return self.path(text(node, self.source), "")
        return ""

    def function(self, node: Node, owner: str, parent: str | None) -> None:
        name = text(node.child_by_field_name("name"), self.source)
        body = node.child_by_field_name("body")
        calls = calls_in(body, self.callee) if body is not None else []
        qualname = f"{owner}.{name}" if owner else name
        symbol = declaration("Function", node, body, self.source, name, qualname, parent, calls, doc=_DOC, trim=";")
        self.parsed.symbols.append(symbol)

    def callee(self, node: Node) -> str:
        return self.name_of(node.child_by_field_name("function")) if node.type == "call_expression" else ""

    def name_of(self, node: Node | None) -> str:
        """A callee as a path (`Store::new`, `self.save`, `util::log`); '' for what has none."""
        if node is None:
            return ""
        kind = node.type
        if kind in ("identifier", "field_identifier"):
            return text(node, self.source)
        if kind == "self":
            return "self"
        if kind == "scoped_identifier":
            written = text(node, self.source)
            if written.startswith("Self::"):
                return "self." + written.removeprefix("Self::")
            return self.path(written, "") if written.startswith(("self::", "super::")) else written
        if kind == "field_expression":
            base = self.name_of(node.child_by_field_name("value"))
            field = text(node.child_by_field_name("field"), self.source)
            return f"{base}.{field}" if base and field else ""
        if kind == "generic_function":
            return self.name_of(node.child_by_field_name("function"))
        if kind == "call_expression":
            base = self.callee(node)
            return f"{base}()" if base else ""
        if kind == "parenthesized_expression" and node.named_children:
            return self.name_of(node.named_children[0])
        return ""
