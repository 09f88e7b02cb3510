"""Which language a file is, and its tree-sitter grammar, imported on first use.

Grammars come from their PyPI wheels (the `code` extra); a file whose grammar is missing fails
alone with the install line for this installation (`evigraph.extras.install_hint`), and nothing
is imported until such a file is met, so `import evigraph` and a Python-only ingest never load
tree-sitter.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from evigraph.extras import install_hint
from evigraph.ingest.code.parsed import CodeParseError

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
"""File extension -> language; files of other extensions are not code to this ingest."""

_GRAMMARS: dict[str, tuple[str, str]] = {
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "javascript": ("tree_sitter_javascript", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}


def grammar_modules() -> dict[str, list[str]]:
    """Each grammar's module -> the languages it reads (`tree_sitter_typescript`: typescript, tsx),
    for `evigraph doctor` to check the same table files are parsed by."""
    out: dict[str, list[str]] = {}
    for language, (module, _) in _GRAMMARS.items():
        out.setdefault(module, []).append(language)
    return out


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


@cache
def parser_for(language: str) -> Any:
    """A tree-sitter parser for `language`, or `CodeParseError` naming the package to install."""
    module_name, function = _GRAMMARS[language]
    try:
        tree_sitter = importlib.import_module("tree_sitter")
        grammar = importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc.name or module_name
        raise CodeParseError(f"{language} needs the tree-sitter grammar {missing}: {install_hint('code')}") from None
    return tree_sitter.Parser(tree_sitter.Language(getattr(grammar, function)()))
