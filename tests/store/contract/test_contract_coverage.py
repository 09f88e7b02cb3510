"""Every GraphStore method has a contract test: a method added without one fails here.

Abstract methods and public ones with a default alike: a backend or a wrapper may override either.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.store.contract.conftest import store_methods

from evigraph.store import GraphStore

HERE = Path(__file__).parent


def covered() -> dict[str, list[str]]:
    """Method -> the tests marked `@covers(...)` for it, read from the source (import-mode proof)."""
    found: dict[str, list[str]] = {}
    for module in sorted(HERE.glob("test_contract_*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test_"):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "covers":
                    for arg in deco.args:
                        assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), ast.dump(arg)
                        found.setdefault(arg.value, []).append(f"{module.name}::{node.name}")
    return found


def test_every_store_method_has_a_contract_test() -> None:
    found = covered()
    methods = store_methods()
    assert GraphStore.__abstractmethods__ <= methods
    missing = sorted(methods - found.keys())
    assert not missing, f"GraphStore methods without a contract test: {missing} (mark one with @covers)"
    assert not found.keys() - methods, "a @covers names no GraphStore method"
