"""Each store backend stands alone: no module of one imports another backend, and the modules
both share (store/*.py, the neutral core in store/core/ and the Cypher rules in store/cypher/)
import neither, except the one that picks a backend for a location.

Shared code once lived inside the embedded backend and the FalkorDB one reached into it, private
names included, so a change to the embedded engine's modules could break the server backend and
a third backend had nowhere neutral to start from. Lazy imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORE = Path(__file__).resolve().parents[2] / "src" / "evigraph" / "store"
BACKENDS = ("embedded", "falkordb")
CHOOSERS = {"opening.py"}
"""Shared modules whose job is to pick a backend (`open_store` for a path or a server URL)."""


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def backend_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["evigraph", "store"] and len(parts) > 2 and parts[2] in BACKENDS:
        return parts[2]
    return None


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_backend_imports_another(backend: str) -> None:
    modules = sorted((STORE / backend).rglob("*.py"))
    assert len(modules) > 10, "the backend's modules were not found"
    crossings = {
        f"{path.relative_to(STORE)} imports {module}"
        for path in modules
        for module in imported_modules(path)
        if backend_of(module) not in (None, backend)
    }
    assert not crossings, sorted(crossings)


def test_shared_store_modules_import_no_backend() -> None:
    shared = [p for p in STORE.glob("*.py") if p.name not in CHOOSERS]
    shared = sorted([*shared, *(STORE / "core").glob("*.py"), *(STORE / "cypher").glob("*.py")])
    assert {"graph_index.py", "decision_writes.py", "lexer.py"} <= {p.name for p in shared}
    crossings = {
        f"{path.relative_to(STORE)} imports {module}"
        for path in shared
        for module in imported_modules(path)
        if backend_of(module)
    }
    assert not crossings, sorted(crossings)


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    """The walk finds lazy imports and `from package import module` forms, or it could pass on anything."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f():\n    from evigraph.store.embedded.graph_reads import read_graph\n"
        "from evigraph.store import falkordb\n",
        encoding="utf-8",
    )
    found = {backend_of(m) for m in imported_modules(sample)}
    assert {"embedded", "falkordb"} <= found
