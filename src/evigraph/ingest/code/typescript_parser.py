"""TypeScript and JavaScript files through tree-sitter grammars (one walker: the grammars share shapes).

Modules are named by their path without extension (`src/models/user`; an `index` file by its
folder), so a relative import (`./models/user`) is turned into that name here and a bare one
(`react`) stays as written. `this` is written `self` in callee names, as resolution reads it.
"""

from __future__ import annotations

import posixpath

from evigraph.ingest.code.grammars import parser_for
from evigraph.ingest.code.parsed import MAX_REFS, ParsedFile, unique_qualnames
from evigraph.ingest.code.syntax_tree import Node, declaration, parse_tree, text

_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "interface_declaration"})
_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def module_name(path: str) -> str:
    """`src/models/user.ts` -> `src/models/user`; `src/models/index.ts` -> `src/models`."""
    stem = posixpath.splitext(path)[0]
    return posixpath.dirname(stem) if posixpath.basename(stem) == "index" else stem


def parse_typescript(source: bytes, path: str, language: str) -> ParsedFile:
    root = parse_tree(parser_for(language), source, language)
    parsed = ParsedFile(language=language, line_end=max(1, root.end_point[0] + 1))
    walker = _Walker(source, posixpath.dirname(path), parsed)
    walker.block(root, None)
    unique_qualnames(parsed.symbols)
    return parsed


class _Walker:
    def __init__(self, source: bytes, folder: str, parsed: ParsedFile) -> None:
        self.source, self.folder, self.parsed = source, folder, parsed

    def block(self, node: Node, parent: str | None) -> None:
        for child in node.named_children:
            self.statement(child, parent)

    def statement(self, node: Node, parent: str | None) -> None:
        kind = node.type
        if kind == "import_statement":
            self.imports(node)
        elif kind == "export_statement":
            for child in node.named_children:
                self.statement(child, parent)
        elif kind in _CLASSES:
            self.klass(node, parent)
        elif kind in _FUNCTIONS:
            self.function(node, node, node.child_by_field_name("name"), parent)
        elif kind in ("lexical_declaration", "variable_declaration"):
            for declarator in node.named_children:
                value = declarator.child_by_field_name("value")
                if declarator.type == "variable_declarator" and value is not None and value.type in _FUNCTION_VALUES:
                    self.function(declarator, value, declarator.child_by_field_name("name"), parent)

    def imports(self, node: Node) -> None:
        source = node.child_by_field_name("source")
        target = self.target(text(source, self.source).strip("'\"`"))
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            self.parsed.imports.append((target, target))  # `import "./polyfill"`: bound to no name
            return
        for part in clause.named_children:
            if part.type == "identifier":  # default import
                self.parsed.imports.append((text(part, self.source), f"{target}.default"))
            elif part.type == "namespace_import":
                name = next((c for c in part.named_children if c.type == "identifier"), None)
                self.parsed.imports.append((text(name, self.source), target))
            elif part.type == "named_imports":
                for spec in part.named_children:
                    name = text(spec.child_by_field_name("name"), self.source)
                    alias = text(spec.child_by_field_name("alias"), self.source) or name
                    self.parsed.imports.append((alias, f"{target}.{name}"))

    def target(self, specifier: str) -> str:
        if not specifier.startswith("."):
            return specifier
        return module_name(posixpath.normpath(posixpath.join(self.folder, specifier)) + ".ts")

    def klass(self, node: Node, parent: str | None) -> None:
        name = text(node.child_by_field_name("name"), self.source)
        qualname = f"{parent}.{name}" if parent else name
        body = node.child_by_field_name("body")
        bases = []
        for clause in node.named_children:
            if clause.type in ("class_heritage", "extends_type_clause"):
                clauses = clause.named_children if clause.type == "class_heritage" else [clause]
                for part in clauses:
                    bases += [self.name_of(t) for t in part.named_children if t.type != "type_arguments"]
        refs = [b for b in bases if b]
        self.parsed.symbols.append(declaration("Class", node, body, self.source, name, qualname, parent, refs))
        for member in body.named_children if body is not None else ():
            if member.type in ("method_definition", "method_signature", "abstract_method_signature"):
                self.function(member, member, member.child_by_field_name("name"), qualname)
            elif member.type in ("public_field_definition", "field_definition"):
                value = member.child_by_field_name("value")
                if value is not None and value.type in _FUNCTION_VALUES:
                    self.function(member, value, member.child_by_field_name("name"), qualname)

    def function(self, node: Node, fn: Node, name_node: Node | None, parent: str | None) -> None:
        name = text(name_node, self.source) or "<anonymous>"
        qualname = f"{parent}.{name}" if parent else name
        body = fn.child_by_field_name("body")
        symbol = declaration("Function", node, body, self.source, name, qualname, parent, [], trim="=> ")
        self.parsed.symbols.append(symbol)
        if body is not None:
            symbol.refs = self.calls(body, qualname)

    def calls(self, body: Node, qualname: str) -> list[str]:
        """Callees in the body in order; named functions declared inside become symbols of their own."""
        found: dict[str, None] = {}
        stack = [body]
        while stack and len(found) < MAX_REFS:
            node = stack.pop()
            if node is not body and node.type in _FUNCTIONS | _CLASSES:
                self.statement(node, qualname)
                continue
            if node.type == "call_expression":
                callee = self.name_of(node.child_by_field_name("function"))
                if callee:
                    found.setdefault(callee)
            elif node.type == "new_expression":
                callee = self.name_of(node.child_by_field_name("constructor"))
                if callee:
                    found.setdefault(callee)
            stack.extend(reversed(node.named_children))
        return list(found)

    def name_of(self, node: Node | None) -> str:
        """A callee or base as a dotted name (`this` written `self`); '' for what has none."""
        if node is None:
            return ""
        if node.type in ("identifier", "type_identifier", "property_identifier", "private_property_identifier"):
            return text(node, self.source)
        if node.type == "this":
            return "self"
        if node.type == "super":
            return "super()"
        if node.type in ("member_expression", "nested_type_identifier", "nested_identifier"):
            parts = [c for c in node.named_children if c.type != "comment"]
            base, prop = self.name_of(parts[0]), self.name_of(parts[-1]) if len(parts) > 1 else ""
            return f"{base}.{prop}" if base and prop else ""
        if node.type == "call_expression":
            base = self.name_of(node.child_by_field_name("function"))
            return f"{base}()" if base else ""
        if node.type == "generic_type":
            return self.name_of(node.named_children[0]) if node.named_children else ""
        if node.type == "parenthesized_expression" and node.named_children:
            return self.name_of(node.named_children[0])
        return ""
