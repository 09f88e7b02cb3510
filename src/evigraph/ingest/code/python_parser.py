"""Python files through the standard library's `ast`: no dependency, the language's own grammar."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence
from typing import Literal

from evigraph.ingest.code.parsed import (
    MAX_DOCSTRING_CHARS,
    MAX_REFS,
    MAX_SIGNATURE_CHARS,
    CodeParseError,
    ParsedFile,
    ParsedSymbol,
    clip,
    unique_qualnames,
)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def parse_python(source: bytes, package: str) -> ParsedFile:
    """The structure of one module; `package` is the dotted package relative imports start from."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in old code are not our report
            tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes
        where = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise CodeParseError(f"Python syntax error{where}: {getattr(exc, 'msg', exc)}") from None
    parsed = ParsedFile(
        language="python",
        line_end=max(1, source.count(b"\n") + (0 if source.endswith(b"\n") else 1)),
        docstring=clip(ast.get_docstring(tree) or "", MAX_DOCSTRING_CHARS),
    )
    for node in ast.walk(tree):  # imports anywhere: a function's own import binds a name resolution needs
        if isinstance(node, ast.Import):
            for alias in node.names:
                # `import a.b` binds `a` but names module `a.b`: recorded under its full name, which
                # resolution matches as the longest dotted prefix of a callee (`a.b.f`).
                parsed.imports.append((alias.asname or alias.name, alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            for alias in node.names:
                target = base if alias.name == "*" else f"{base}.{alias.name}" if base else alias.name
                parsed.imports.append((alias.asname or alias.name, target))
    _walk(tree.body, None, parsed.symbols)
    unique_qualnames(parsed.symbols)
    return parsed


def _absolute(module: str | None, level: int, package: str) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    return ".".join([*base, *([module] if module else [])])


def _walk(body: Sequence[ast.AST], parent: str | None, out: list[ParsedSymbol]) -> None:
    """Symbols in `body`, outer before inner, including defs nested in if/try/with blocks."""
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            qualname = f"{parent}.{node.name}" if parent else node.name
            out.append(_symbol(node, qualname, parent))
            _walk(node.body, qualname, out)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    _walk([n for n in inner if isinstance(n, ast.AST)], parent, out)
            if isinstance(node, ast.ExceptHandler):
                _walk(node.body, parent, out)


def _symbol(
    node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, parent: str | None
) -> ParsedSymbol:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    doc = clip(ast.get_docstring(node) or "", MAX_DOCSTRING_CHARS)
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases]
        args = ", ".join([*bases, *(ast.unparse(k) for k in node.keywords)])
        signature = f"class {node.name}({args})" if args else f"class {node.name}"
        kind: Literal["Class", "Function"] = "Class"
        refs = [r for r in (_callee(b) for b in node.bases) if r]
    else:
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        signature = f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"
        kind, refs = "Function", _calls(node)
    end = node.end_lineno or node.lineno
    return ParsedSymbol(kind, node.name, qualname, parent, clip(signature, MAX_SIGNATURE_CHARS), doc, start, end, refs)


def _calls(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The function's callees in order, each once; calls inside nested defs belong to those."""
    found: dict[str, None] = {}
    stack: list[ast.AST] = list(reversed(function.body))
    while stack and len(found) < MAX_REFS:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Call) and (name := _callee(node.func)):
            found.setdefault(name)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return list(found)


def _callee(expr: ast.expr) -> str | None:
    """`a.b.c`, `f().g`, `super().m` as written; None for what has no name (a subscript, a lambda)."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _callee(expr.value)
        return f"{base}.{expr.attr}" if base else None
    if isinstance(expr, ast.Call):
        base = _callee(expr.func)
        return f"{base}()" if base else None
    return None
