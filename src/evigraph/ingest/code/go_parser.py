"""Go files through the tree-sitter Go grammar.

A Go module here is one file, named by its package's import path (`go.mod`'s module path and the
folder, see `files.module_name`), so the files of one package share a name and a call to a
function of the same package resolves whichever file defines it. Struct and interface types are
classes; a method belongs to its receiver's type (`Store.Save`); an embedded type is a base
class, as its methods are promoted. The receiver variable is written `self` in callee names.
"""

from __future__ import annotations

from evigraph.ingest.code.grammars import parser_for
from evigraph.ingest.code.parsed import ParsedFile, ParsedSymbol, unique_qualnames
from evigraph.ingest.code.syntax_tree import Node, calls_in, declaration, leading_comment, lines, parse_tree, text


def parse_go(source: bytes) -> ParsedFile:
    root = parse_tree(parser_for("go"), source, "go")
    parsed = ParsedFile(language="go", line_end=max(1, root.end_point[0] + 1))
    types: dict[str, Node] = {}
    for node in root.named_children:
        if node.type == "package_clause":
            parsed.docstring = leading_comment(node, source)
        elif node.type == "import_declaration":
            for spec in _specs(node):
                path = text(spec.child_by_field_name("path"), source).strip('"`')
                alias = text(spec.child_by_field_name("name"), source) or path.rsplit("/", 1)[-1]
                parsed.imports.append((alias, path))
        elif node.type == "type_declaration":
            for spec in node.named_children:
                if spec.type == "type_spec":
                    types[text(spec.child_by_field_name("name"), source)] = spec
                    parsed.symbols.append(_type(spec, node, source))
    for node in root.named_children:
        if node.type in ("function_declaration", "method_declaration"):
            parsed.symbols.append(_function(node, source, types))
    unique_qualnames(parsed.symbols)
    return parsed


def _specs(node: Node) -> list[Node]:
    found = []
    for child in node.named_children:
        if child.type == "import_spec":
            found.append(child)
        elif child.type == "import_spec_list":
            found += [c for c in child.named_children if c.type == "import_spec"]
    return found


def _type(spec: Node, declaration: Node, source: bytes) -> ParsedSymbol:
    name = text(spec.child_by_field_name("name"), source)
    body = spec.child_by_field_name("type")
    bases = []
    if body is not None and body.type == "struct_type":
        for fields in body.named_children:
            for field in fields.named_children:
                if field.type == "field_declaration" and field.child_by_field_name("name") is None:
                    bases.append(_type_name(field.child_by_field_name("type"), source))
    elif body is not None and body.type == "interface_type":
        for element in body.named_children:
            if element.type in ("type_elem", "constraint_elem"):
                bases += [_type_name(t, source) for t in element.named_children]
    start, end = lines(declaration if len(declaration.named_children) == 1 else spec)
    kind_word = body.type.removesuffix("_type") if body is not None else "type"
    signature = f"type {name} {kind_word}"
    doc = leading_comment(declaration if len(declaration.named_children) == 1 else spec, source)
    return ParsedSymbol("Class", name, name, None, signature, doc, start, end, [b for b in bases if b])


def _type_name(node: Node | None, source: bytes) -> str:
    """`Base`, `*Base` and `pkg.Base` as a dotted name; '' for a type literal."""
    if node is None:
        return ""
    if node.type == "pointer_type" and node.named_children:
        return _type_name(node.named_children[0], source)
    if node.type == "generic_type":
        return _type_name(node.child_by_field_name("type"), source)
    if node.type in ("type_identifier", "qualified_type"):
        return text(node, source)
    return ""


def _function(node: Node, source: bytes, types: dict[str, Node]) -> ParsedSymbol:
    name = text(node.child_by_field_name("name"), source)
    body = node.child_by_field_name("body")
    owner, receiver = _receiver(node, source)
    qualname = f"{owner}.{name}" if owner else name
    parent = owner if owner in types else None  # a method of a type declared in another file of the package
    calls = _calls(body, source, receiver) if body is not None else []
    return declaration("Function", node, body, source, name, qualname, parent, calls)


def _receiver(node: Node, source: bytes) -> tuple[str, str]:
    """(receiver type, receiver variable) of a method; ('', '') for a function."""
    params = node.child_by_field_name("receiver")
    if params is None:
        return "", ""
    for param in params.named_children:
        if param.type == "parameter_declaration":
            return _type_name(param.child_by_field_name("type"), source), text(
                param.child_by_field_name("name"), source
            )
    return "", ""


def _calls(body: Node, source: bytes, receiver: str) -> list[str]:
    return calls_in(
        body,
        lambda n: _callee(n.child_by_field_name("function"), source, receiver) if n.type == "call_expression" else "",
    )


def _callee(node: Node | None, source: bytes, receiver: str) -> str:
    if node is None:
        return ""
    if node.type in ("identifier", "field_identifier", "package_identifier"):
        name = text(node, source)
        return "self" if receiver and name == receiver else name
    if node.type == "selector_expression":
        base = _callee(node.child_by_field_name("operand"), source, receiver)
        field = text(node.child_by_field_name("field"), source)
        return f"{base}.{field}" if base and field else ""
    if node.type == "call_expression":
        base = _callee(node.child_by_field_name("function"), source, receiver)
        return f"{base}()" if base else ""
    if node.type == "parenthesized_expression" and node.named_children:
        return _callee(node.named_children[0], source, receiver)
    return ""
