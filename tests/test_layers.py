"""The package's layers, held by its imports: each module imports only its own layer and those
below it, and no chain of imports (lazy ones inside functions included) leads back to where it
started.

Read from the source, not from `sys.modules`, so an import that runs only on one path (a verb, a
backend, an optional provider) counts as much as one at the top of a file. `TYPE_CHECKING`
imports do not run and do not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import evigraph

ROOT = Path(evigraph.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("evigraph", "evigraph.__main__", "evigraph.sync"),
    ("evigraph.cli", "evigraph.doctor"),
    ("evigraph.api",),
    ("evigraph.mcp",),
    ("evigraph.serving",),
    ("evigraph.tools",),
    ("evigraph.kb",),
    ("evigraph.retrieval", "evigraph.evidence"),
    ("evigraph.ingest",),
    ("evigraph.store", "evigraph.providers"),
)
"""Highest first. A module outside every prefix here (models, errors, display, ...) is in the
base layer below them all. The HTTP server (api) mounts the MCP endpoint, so it sits above mcp;
both reach the toolkit through serving; a tool reads through the knowledge base, never the store."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    """The layer's depth, 0 for the highest; the base layer is `len(LAYERS)`."""
    best = (len(LAYERS), -1)
    for depth, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module == prefix or (prefix != "evigraph" and module.startswith(prefix + "."))
            if inside and len(prefix) > best[1]:
                best = (depth, len(prefix))
    return best[0]


def _resolve(name: str) -> str | None:
    """The module `name` is, or the package holding it (for `from pkg import function`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("evigraph") and (target := _resolve(name)) and target != module:
                yield target


GRAPH = {module: set(_imports(module, path)) for module, path in MODULES.items()}


def test_the_layer_table_covers_every_package() -> None:
    """A new package must be placed in the table, not fall silently into the base layer."""
    packages = {m for m, p in MODULES.items() if p.name == "__init__.py" and m.count(".") == 1}
    placed = {prefix for layer in LAYERS for prefix in layer}
    assert packages - placed == set()


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if _layer(t) < _layer(m))


def test_every_import_goes_down_or_stays_in_its_layer() -> None:
    assert _upward(GRAPH) == []


def test_no_import_cycle() -> None:
    """Tarjan's strongly connected components over every run-time import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_checks_see_a_violation() -> None:
    """The analysis reads real imports, and a store reaching up to the knowledge base would fail."""
    assert "evigraph.cli.parser" in GRAPH["evigraph.cli.main"]  # a module-level import
    assert "evigraph.kb" in GRAPH["evigraph.cli.maintenance"]  # one inside a function
    assert _upward({"evigraph.store.base": {"evigraph.kb.core"}}) == ["evigraph.store.base -> evigraph.kb.core"]
    assert _upward({"evigraph.kb.core": {"evigraph.store.base", "evigraph.models"}}) == []
    assert _layer("evigraph") < _layer("evigraph.cli.main") < _layer("evigraph.models") == len(LAYERS)
