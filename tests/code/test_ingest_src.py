"""Code ingest of evigraph's own `src/`: the edges, line ranges and texts checked against the source."""

from __future__ import annotations

import ast
import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.code.conftest import SRC
from tests.conftest import engine_connection

from evigraph import KnowledgeBase
from evigraph.ingest.code.files import CODE_EXTENSIONS, generated
from evigraph.ingest.code.run import CodeIngestReport
from evigraph.kb.reads import ReadOps
from evigraph.retrieval.retriever import MultiPathRetrieval
from evigraph.store import connect
from evigraph.store.embedded.reads import stored_document

pytestmark = pytest.mark.slow

KB_PACKAGE = SRC / "evigraph" / "kb"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def src_kb(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[KnowledgeBase, CodeIngestReport]]:
    async with KnowledgeBase(tmp_path_factory.mktemp("src") / "kb.db") as kb:
        yield kb, await kb.ingest_code([SRC])


async def rows(kb: KnowledgeBase, cypher: str, **params: Any) -> list[dict[str, Any]]:
    assert kb.store is not None
    return await kb.store.cypher_query(cypher, params, limit=1000)


def called_names(function: object) -> set[str]:
    """The plain names `function` calls as the source says (`name(...)`), read with `ast`."""
    tree = ast.parse(inspect.getsource(function).strip().replace("\n    ", "\n"))  # type: ignore[arg-type]
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


@pytest.mark.asyncio(loop_scope="module")
async def test_the_whole_tree_is_ingested(src_kb: tuple[KnowledgeBase, CodeIngestReport]) -> None:
    _, report = src_kb
    sources = [
        f for f in SRC.rglob("*") if f.suffix in CODE_EXTENSIONS and not generated(f.relative_to(SRC).as_posix())
    ]
    python_files = sum(1 for f in sources if f.suffix == ".py" and "__pycache__" not in f.parts)
    assert python_files > 200 and any(f.suffix == ".js" for f in sources)  # the web UI's modules
    assert not any(f.name.endswith(".min.js") for f in sources)  # its vendored library is passed over
    assert report.files == report.parsed == len(sources) and not report.failed
    assert report.nodes_added > python_files * 5 and report.edges_added > report.nodes_added


async def test_the_code_graph_grows_the_file_by_a_small_multiple_of_the_source(tmp_path: Path) -> None:
    """Issue 34's bar: at most 10x the source's bytes. Before the code graph's edges were appended
    by COPY and its full-text indexes left for `bm25`, this tree grew the file by about 40x."""
    empty, full = tmp_path / "empty.db", tmp_path / "code.db"
    async with connect(empty):  # a new knowledge base, with every table and nothing in them
        pass
    async with KnowledgeBase(full) as kb:
        report = await kb.ingest_code([SRC])
    sources = [
        f for f in SRC.rglob("*") if f.suffix in CODE_EXTENSIONS and not generated(f.relative_to(SRC).as_posix())
    ]
    source_bytes = sum(f.stat().st_size for f in sources)
    assert report.parsed == len(sources) and source_bytes > 1_000_000
    growth = full.stat().st_size - empty.stat().st_size
    assert 0 < growth <= 10 * source_bytes, (growth, source_bytes)


@pytest.mark.asyncio(loop_scope="module")
async def test_calls_resolve_to_the_imported_functions(src_kb: tuple[KnowledgeBase, CodeIngestReport]) -> None:
    kb, _ = src_kb
    assert {"show_properties"} <= called_names(ReadOps.retrieve)  # what the source says, read here
    assert {"run_legs", "question_vectors"} <= called_names(MultiPathRetrieval.search)
    found = await rows(
        kb,
        """MATCH (k:Class {name: 'KnowledgeBase'})-[:INHERITS]->(c:Class)-[:CONTAINS]->(f:Function {name: 'retrieve'})
           MATCH (f)-[:CALLS]->(g:Function) RETURN c.qualname AS owner, g.module AS module, g.qualname AS callee""",
    )
    assert {r["owner"] for r in found} == {"ReadOps"}
    assert ("evigraph.kb.properties", "show_properties") in {(r["module"], r["callee"]) for r in found}
    found = await rows(
        kb,
        """MATCH (c:Class {name: 'MultiPathRetrieval'})-[:CONTAINS]->(f:Function {name: 'search'})
           MATCH (f)-[:CALLS]->(g:Function) RETURN g.module AS module, g.qualname AS callee""",
    )
    callees = {(r["module"], r["callee"]) for r in found}
    assert {("evigraph.retrieval.paths", "run_legs"), ("evigraph.retrieval.vectors", "question_vectors")} <= callees


@pytest.mark.asyncio(loop_scope="module")
async def test_imports_of_the_kb_package_are_those_of_its_source(
    src_kb: tuple[KnowledgeBase, CodeIngestReport],
) -> None:
    kb, _ = src_kb
    tree = ast.parse((KB_PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    expected = {
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("evigraph")
    }
    found = await rows(kb, "MATCH (m:Module {name: 'evigraph.kb'})-[:IMPORTS]->(x:Module) RETURN x.name AS name")
    assert {r["name"] for r in found} == expected
    assert {"evigraph.kb.core", "evigraph.kb.reads", "evigraph.kb.writes", "evigraph.kb.code"} <= expected


@pytest.mark.asyncio(loop_scope="module")
async def test_line_ranges_match_the_source(src_kb: tuple[KnowledgeBase, CodeIngestReport]) -> None:
    kb, _ = src_kb
    for obj in (ReadOps.retrieve, MultiPathRetrieval.search, MultiPathRetrieval, KnowledgeBase, stored_document):
        lines, start = inspect.getsourcelines(obj)
        kind = "Class" if inspect.isclass(obj) else "Function"
        found = await rows(
            kb,
            f"MATCH (n:{kind}) WHERE n.module = $m AND n.qualname = $q "
            "RETURN n.line_start AS s, n.line_end AS e, n.path AS path",
            m=obj.__module__,
            q=obj.__qualname__,
        )
        assert len(found) == 1, obj
        assert (found[0]["s"], found[0]["e"]) == (start, start + len(lines) - 1), obj
        assert Path(inspect.getsourcefile(obj) or "").as_posix().endswith(found[0]["path"])


@pytest.mark.asyncio(loop_scope="module")
async def test_no_function_body_is_stored(src_kb: tuple[KnowledgeBase, CodeIngestReport], tmp_path: Path) -> None:
    kb, _ = src_kb
    body_line = 'ledger.cite("retrieve", result.facts, kind="fact")'
    assert body_line in inspect.getsource(ReadOps.retrieve)
    assert kb.store is not None
    path = Path(kb.store.path)  # type: ignore[attr-defined]
    await kb.close()
    texts = stored_strings(path)
    assert len(texts) > 10_000
    assert not [t for t in texts if body_line in t or 'kind="fact")' in t]
    assert any("def retrieve(self, query: str | RetrieveInput" in t for t in texts)  # signatures are stored


def stored_strings(path: Path) -> list[str]:
    """Every string value in every table of the database file, read with the engine itself."""
    conn = engine_connection(path, read_only=True)
    out: list[str] = []
    try:
        tables = conn.execute("CALL SHOW_TABLES() RETURN name, type")
        while tables.has_next():
            name, kind = tables.get_next()
            query = f"MATCH (n:`{name}`) RETURN n" if kind == "NODE" else f"MATCH ()-[n:`{name}`]->() RETURN n"
            result = conn.execute(query)
            while result.has_next():
                collect(result.get_next()[0], out)
    finally:
        conn.close()
        conn.database.close()
    return out


def collect(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            collect(v, out)
    elif isinstance(value, list):
        for v in value:
            collect(v, out)
