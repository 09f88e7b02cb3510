"""Java files through the tree-sitter Java grammar.

A module is the file's class: its package and the file's name (`com.shop.Order` for
`com/shop/Order.java` declaring `package com.shop;`), as imports spell it; the resolver reads a
name reaching a Java module as that module's class, and looks a name no import binds up in the
module's own package, as Java does. Classes, interfaces, enums and records are classes, with
`extends` and `implements` as bases; methods and constructors are functions (a constructor is
named as its class, which is how the resolver finds it for `new Order(...)`). A method called
without a receiver is written `self.name` (Java's implicit `this`) unless a static import binds
the name; `this` is written `self`, `super` as `super()`.
"""

from __future__ import annotations

import posixpath

from evigraph.ingest.code.grammars import parser_for
from evigraph.ingest.code.parsed import ParsedFile, unique_qualnames
from evigraph.ingest.code.syntax_tree import Node, calls_in, declaration, leading_comment, parse_tree, text

_CLASSES = frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"})
_FUNCTIONS = frozenset({"method_declaration", "constructor_declaration", "compact_constructor_declaration"})
_BASES = frozenset({"superclass", "super_interfaces", "extends_interfaces"})
_DOC = ("/**",)


def parse_java(source: bytes, path: str) -> ParsedFile:
    root = parse_tree(parser_for("java"), source, "java")
    parsed = ParsedFile(language="java", line_end=max(1, root.end_point[0] + 1))
    walker = _Walker(source, parsed)
    package = ""
    for node in root.named_children:
        if node.type == "package_declaration":
            named = [c for c in node.named_children if c.type in ("identifier", "scoped_identifier")]
            package = text(named[0], source) if named else ""
            parsed.docstring = leading_comment(node, source, _DOC)
        elif node.type == "import_declaration":
            walker.imports(node)
    for node in root.named_children:
        if node.type in _CLASSES:
            walker.klass(node, None)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    parsed.module = f"{package}.{stem}" if package else stem
    unique_qualnames(parsed.symbols)
    return parsed


class _Walker:
    def __init__(self, source: bytes, parsed: ParsedFile) -> None:
        self.source, self.parsed = source, parsed
        self.static: set[str] = set()
        """Names bound by `import static`: called bare, they are not the class's own methods."""

    def imports(self, node: Node) -> None:
        named = [c for c in node.named_children if c.type in ("identifier", "scoped_identifier")]
        if not named:
            return
        target = text(named[0], self.source)
        if any(c.type == "asterisk" for c in node.named_children):
            self.parsed.imports.append((target, target))  # `import a.b.*`: binds no one name
            return
        alias = target.rsplit(".", 1)[-1]
        if any(c.type == "static" for c in node.children):
            self.static.add(alias)
        self.parsed.imports.append((alias, target))

    def klass(self, node: Node, parent: str | None) -> None:
        name = text(node.child_by_field_name("name"), self.source)
        qualname = f"{parent}.{name}" if parent else name
        body = node.child_by_field_name("body")
        bases = []
        for clause in node.named_children:
            if clause.type in _BASES:
                for part in clause.named_children:
                    types = part.named_children if part.type == "type_list" else [part]
                    bases += [self.type_name(t) for t in types]
        symbol = declaration(
            "Class", node, body, self.source, name, qualname, parent, [b for b in bases if b], doc=_DOC
        )
        self.parsed.symbols.append(symbol)
        members = list(body.named_children) if body is not None else []
        for holder in [m for m in members if m.type == "enum_body_declarations"]:
            members += holder.named_children  # an enum's methods follow its constants
        for member in members:
            if member.type in _CLASSES:
                self.klass(member, qualname)
            elif member.type in _FUNCTIONS:
                self.function(member, qualname)

    def type_name(self, node: Node | None) -> str:
        """`Base`, `a.b.Base`, `Base<T>` as a dotted name; '' for what has none."""
        if node is None:
            return ""
        if node.type == "generic_type":
            return self.type_name(node.named_children[0]) if node.named_children else ""
        if node.type in ("type_identifier", "scoped_type_identifier", "identifier", "scoped_identifier"):
            return "".join(text(node, self.source).split())
        return ""

    def function(self, node: Node, parent: str) -> None:
        name = text(node.child_by_field_name("name"), self.source)
        body = node.child_by_field_name("body")
        calls = calls_in(body, self.callee) if body is not None else []
        qualname = f"{parent}.{name}"
        symbol = declaration("Function", node, body, self.source, name, qualname, parent, calls, doc=_DOC, trim=";")
        self.parsed.symbols.append(symbol)

    def callee(self, node: Node) -> str:
        kind = node.type
        if kind == "method_invocation":
            name = text(node.child_by_field_name("name"), self.source)
            target = node.child_by_field_name("object")
            if target is None:
                return name if name in self.static else f"self.{name}"
            base = self.name_of(target)
            return f"{base}.{name}" if base else ""
        if kind == "object_creation_expression":
            return self.type_name(node.child_by_field_name("type"))
        if kind == "explicit_constructor_invocation":  # `super(...)`, `this(...)` in a constructor
            return self.name_of(node.child_by_field_name("constructor"))
        return ""

    def name_of(self, node: Node | None) -> str:
        """A receiver as a dotted name (`this` written `self`); '' for what has none."""
        if node is None:
            return ""
        kind = node.type
        if kind == "identifier":
            return text(node, self.source)
        if kind == "this":
            return "self"
        if kind == "super":
            return "super()"
        if kind == "field_access":
            base = self.name_of(node.child_by_field_name("object"))
            field = text(node.child_by_field_name("field"), self.source)
            return f"{base}.{field}" if base and field else ""
        if kind in ("method_invocation", "object_creation_expression"):
            base = self.callee(node)
            return f"{base}()" if base else ""
        if kind == "parenthesized_expression" and node.named_children:
            return self.name_of(node.named_children[0])
        return ""
