"""TypeScript, Go, Rust and Java through their tree-sitter grammars: classes, functions, imports,
calls, inheritance."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.code.conftest import copy_fixture
from tests.code.test_ingest_src import stored_strings

from evigraph import KnowledgeBase
from evigraph.doctor import doctor
from evigraph.extras import install_hint
from evigraph.ingest.code import grammars


async def graph(kb: KnowledgeBase, cypher: str) -> set[tuple[Any, ...]]:
    assert kb.store is not None
    return {tuple(r.values()) for r in await kb.store.cypher_query(cypher, limit=500)}


CALLS = "MATCH (f:Function)-[:CALLS]->(g:Function) RETURN f.qualname, g.qualname"
INHERITS = "MATCH (a:Class)-[:INHERITS]->(b:Class) RETURN a.qualname, b.qualname"
IMPORTS = "MATCH (a:Module)-[:IMPORTS]->(b:Module) RETURN a.name, b.name"


async def test_typescript_fixture(tmp_path: Path) -> None:
    repo = copy_fixture("ts_app", tmp_path)
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([repo])
        assert (report.files, report.parsed, report.failed) == (4, 4, [])
        assert await graph(kb, "MATCH (r:Repo)-[:CONTAINS]->(m:Module) RETURN r.name, m.name, m.language") == {
            ("ts_app", f"src/{name}", "typescript") for name in ("models/base", "models/user", "service", "util")
        }
        assert await graph(kb, "MATCH (m:Module)-[:CONTAINS]->(c:Class) RETURN m.name, c.name") == {
            ("src/models/base", "Identified"),
            ("src/models/base", "Entity"),
            ("src/models/user", "User"),
            ("src/service", "UserService"),
        }
        assert await graph(kb, IMPORTS) == {
            ("src/models/user", "src/models/base"),
            ("src/service", "src/models/user"),
            ("src/service", "src/util"),
        }
        assert await graph(kb, INHERITS) == {("User", "Entity"), ("Entity", "Identified")}
        assert {
            ("User.greet", "Entity.describe"),  # this.describe(), inherited
            ("createUser", "log"),  # util.log through `import * as util`
            ("createUser", "User.constructor"),  # new User(...)
            ("UserService.add", "createUser"),  # same module
            ("UserService.add", "double"),  # an arrow function bound to a const
            ("User.constructor", "Entity.constructor"),  # super(id)
        } <= await graph(kb, CALLS)
        [row] = await graph(
            kb,
            "MATCH (f:Function {qualname: 'createUser'}) RETURN f.signature, f.docstring, f.line_start, f.line_end",
        )
        assert row == (
            "function createUser(id: string, name: string): User",
            "Create a user and record it in the audit log.",
            5,
            9,
        )


async def test_go_fixture(tmp_path: Path) -> None:
    repo = copy_fixture("go_app", tmp_path)
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([repo])
        assert (report.parsed, report.failed) == (2, [])
        assert await graph(kb, "MATCH (m:Module) RETURN m.path, m.name") == {
            ("main.go", "example.com/shop"),
            ("store/store.go", "example.com/shop/store"),
        }
        assert await graph(kb, "MATCH (c:Class)-[:CONTAINS]->(f:Function) RETURN c.name, f.name") == {
            ("Base", "Close"),
            ("Store", "init"),
            ("Store", "Save"),
        }
        assert await graph(kb, IMPORTS) == {("example.com/shop", "example.com/shop/store")}
        assert await graph(kb, INHERITS) == {("Store", "Base")}  # an embedded struct
        assert await graph(kb, CALLS) == {
            ("main", "Open"),  # store.Open, through the import path
            ("main", "run"),
            ("Store.Save", "Base.Close"),  # s.Close(), promoted from the embedded Base
        }
        [doc] = await graph(kb, "MATCH (f:Function {name: 'Open'}) RETURN f.docstring")
        assert doc == ("Open opens the store at path.",)


async def test_rust_fixture(tmp_path: Path) -> None:
    repo = copy_fixture("rust_app", tmp_path)
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([repo])
        assert (report.parsed, report.failed) == (3, [])
        assert await graph(kb, "MATCH (m:Module) RETURN m.path, m.name, m.docstring") == {
            ("src/main.rs", "crate", "The shop's command line."),
            ("src/store/mod.rs", "crate::store", "Orders kept on disk."),
            ("src/util.rs", "crate::util", ""),
        }
        assert await graph(kb, "MATCH (m:Module)-[:CONTAINS]->(c:Class) RETURN m.name, c.name") == {
            ("crate", "Report"),
            ("crate::store", "Storage"),  # a trait
            ("crate::store", "Store"),
            ("crate::store", "Mode"),  # an enum
        }
        assert await graph(kb, "MATCH (c:Class)-[:CONTAINS]->(f:Function) RETURN c.name, f.qualname") == {
            ("Report", "Report.fmt"),
            ("Storage", "Storage.save"),
            ("Storage", "Storage.close"),
            ("Store", "Store.new"),
            ("Store", "Store.check"),
            ("Store", "Store.save"),
        }
        assert await graph(kb, IMPORTS) == {
            ("crate", "crate::store"),  # `mod store;` and `use crate::store::{...}`
            ("crate", "crate::util"),
            ("crate::store", "crate::util"),  # `use super::util::log`
        }
        assert await graph(kb, INHERITS) == {("Store", "Storage")}  # `impl Storage for Store`
        assert await graph(kb, CALLS) == {
            ("main", "Store.new"),  # Store::new through `use crate::store::Store`
            ("main", "run"),
            ("main", "log"),  # util::log through `mod util;`
            ("Storage.close", "log"),
            ("Store.save", "Store.check"),  # self.check()
            ("Store.save", "Storage.close"),  # a trait's default method
            ("Store.save", "log"),
        }
        [row] = await graph(
            kb, "MATCH (f:Function {qualname: 'Store.new'}) RETURN f.signature, f.docstring, f.line_start, f.line_end"
        )
        assert row == ("pub fn new(path: &str) -> Self", "A store at `path`.", 27, 31)
        [row] = await graph(kb, "MATCH (c:Class {name: 'Store'}) RETURN c.signature, c.docstring, c.line_start")
        assert row == ("pub struct Store", "An order store backed by a file.", 16)  # below its #[derive]
        assert kb.store is not None
        path = Path(kb.store.path)  # type: ignore[attr-defined]
    texts = stored_strings(path)
    assert not [t for t in texts if "to_string()" in t or '"order-1"' in t]  # bodies are not stored (callee names are)


async def test_java_fixture(tmp_path: Path) -> None:
    repo = copy_fixture("java_app", tmp_path)
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([repo])
        assert (report.parsed, report.failed) == (3, [])
        assert await graph(kb, "MATCH (m:Module) RETURN m.path, m.name") == {
            ("src/main/java/com/shop/Shop.java", "com.shop.Shop"),
            ("src/main/java/com/shop/model/Entity.java", "com.shop.model.Entity"),
            ("src/main/java/com/shop/model/Order.java", "com.shop.model.Order"),
        }
        assert await graph(kb, "MATCH (m:Module)-[:CONTAINS]->(c:Class) RETURN m.name, c.qualname") == {
            ("com.shop.Shop", "Shop"),
            ("com.shop.model.Entity", "Entity"),
            ("com.shop.model.Entity", "Identified"),  # package-private, beside Entity
            ("com.shop.model.Order", "Order"),
        }
        assert await graph(kb, "MATCH (c:Class)-[:CONTAINS]->(x) RETURN c.qualname, x.qualname") >= {
            ("Order", "Order.Status"),  # a nested enum
            ("Order", "Order.Order"),  # the constructor
            ("Identified", "Identified.id"),
        }
        assert await graph(kb, IMPORTS) == {
            ("com.shop.Shop", "com.shop.model.Order"),  # a class import and a static import
        }
        assert await graph(kb, INHERITS) == {
            ("Order", "Entity"),  # same package, no import
            ("Order", "Identified"),  # declared in another class's file
        }
        assert await graph(kb, CALLS) == {
            ("Shop.main", "Order.of"),  # `import static ...Order.of`
            ("Shop.main", "Shop.close"),  # new Shop().close()
            ("Shop.close", "Shop.log"),  # implicit this
            ("Order.Order", "Entity.Entity"),  # super(id)
            ("Order.of", "Order.Order"),  # new Order(...)
            ("Order.id", "Entity.describe"),  # inherited
        }
        [row] = await graph(
            kb, "MATCH (f:Function {qualname: 'Shop.main'}) RETURN f.signature, f.docstring, f.line_start, f.line_end"
        )
        assert row == ("public static void main(String[] args)", "Place one order and print it.", 12, 16)
        [row] = await graph(kb, "MATCH (c:Class {name: 'Order'}) RETURN c.signature, c.docstring, c.line_end")
        assert row == ("public class Order extends Entity implements Identified", "An order placed by a customer.", 28)
        assert kb.store is not None
        path = Path(kb.store.path)  # type: ignore[attr-defined]
    texts = stored_strings(path)
    assert not [t for t in texts if "println(" in t or '"o-1"' in t]  # bodies are not stored (callee names are)


async def test_a_missing_grammar_fails_its_files_with_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_fixture("go_app", tmp_path)
    (repo / "tool.py").write_text("def main() -> None:\n    print('ok')\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "tree_sitter_go", None)  # as if the wheel were not installed
    grammars.parser_for.cache_clear()
    try:
        async with KnowledgeBase(tmp_path / "kb.db") as kb:
            report = await kb.ingest_code([repo])
    finally:
        grammars.parser_for.cache_clear()
    assert report.parsed == 1  # the Python file
    assert [f.path.rsplit("/", 1)[-1] for f in report.failed] == ["main.go", "store.go"]
    hint = install_hint("code")  # `pip install 'evigraph[code]'`, or the editable checkout's own folder
    assert hint.startswith("pip install") and hint.endswith("[code]'")
    assert all(f.error == f"go needs the tree-sitter grammar tree_sitter_go: {hint}" for f in report.failed)


def test_doctor_reports_each_code_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = {c.name: c for c in doctor().checks if c.area == "code"}
    assert set(checks) == {"tree-sitter", "typescript, tsx", "javascript", "go", "rust", "java"}
    assert all(c.ok for c in checks.values())
    assert checks["rust"].detail == "code ingest of rust (tree_sitter_rust)"
    monkeypatch.setitem(sys.modules, "tree_sitter_rust", None)  # as if the wheel were not installed
    [rust] = [c for c in doctor().checks if c.name == "rust"]
    assert not rust.ok and rust.detail.endswith(": not installed") and rust.hint == install_hint("code")


async def test_a_file_that_does_not_parse_is_reported_with_its_line(tmp_path: Path) -> None:
    repo = copy_fixture("ts_app", tmp_path)
    (repo / "src" / "broken.ts").write_text("export function ok() {}\n\nexport class {\n", encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([repo])
    assert report.parsed == 4
    [failed] = report.failed
    assert failed.path.endswith("src/broken.ts") and failed.error.startswith("typescript syntax error at line")
