"""Code through the agent's tools and retrieval: `ingest_code` confined to the files root, symbols
found by `search_entities` and `retrieve`, passages linked to the symbols they name, and the
ontology describing the code tables."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.code.conftest import FIXTURES
from tests.tools.conftest import run

from evigraph import KnowledgeBase, Toolkit
from evigraph.tools.code_tools import IngestCodeResult
from evigraph.tools.graph_tools import CypherResult, OntologyResult

HTTP = '''"""Talking to servers."""


class RetryPolicy:
    """Exponential backoff between attempts of a failed request."""

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt `attempt`."""
        return 0.5 * 2**attempt


def fetch(url: str) -> bytes:
    """Fetch `url`, retrying as the policy says."""
    RetryPolicy().delay(1)
    return b""
'''
NOTES = "Failed requests are retried: RetryPolicy.delay says how long to wait, and fetch_with_care is unrelated."


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "client").mkdir(parents=True)
    (folder / "client" / "http.py").write_text(HTTP, encoding="utf-8")
    (folder / "client" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copytree(FIXTURES / "ts_app", folder / "web")
    return folder


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as fresh:
        yield fresh


async def test_ingest_code_tool_reads_under_the_files_root_only(kb: KnowledgeBase, root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.py").write_text(HTTP, encoding="utf-8")
    tk = Toolkit(kb, files_root=root)
    result = await run(tk, "ingest_code", {"paths": ["client", "web"]}, IngestCodeResult)
    assert (result.parsed, result.failed) == (6, [])
    assert "files: 6 found, 6 parsed" in result.to_llm_text()
    refused = await run(tk, "ingest_code", {"paths": ["../outside.py", str(tmp_path / "outside.py")]}, IngestCodeResult)
    assert refused.parsed == 0 and len(refused.failed) == 2 and refused.hint
    assert "leaves files_root" in refused.failed[0].error and "absolute" in refused.failed[1].error
    again = await run(tk, "ingest_code", {"paths": ["client"], "calls": False}, IngestCodeResult)
    assert (again.parsed, again.unchanged) == (0, 2)


async def test_ingest_code_is_a_write_tool_offered_with_a_files_root(kb: KnowledgeBase, root: Path) -> None:
    assert "ingest_code" in {t.name for t in Toolkit(kb, files_root=root).tools()}
    assert "ingest_code" not in {t.name for t in Toolkit(kb).tools()}
    assert "ingest_code" not in {t.name for t in Toolkit(kb, files_root=root, read_only=True).tools()}


async def test_symbols_are_found_by_search_and_retrieve_and_passages_link_to_them(
    kb: KnowledgeBase, root: Path
) -> None:
    await kb.ingest([], text=NOTES, key="notes/retries")  # docs first: linked when the code comes
    tk = Toolkit(kb, files_root=root)
    ingested = await run(tk, "ingest_code", {"paths": ["client"]}, IngestCodeResult)
    assert ingested.passages_linked == 1  # RetryPolicy.delay; the bare word fetch is no link
    await kb.ingest([], text="The RetryPolicy class has one method.", key="notes/class")  # code first, docs later

    found = await kb.search_entities("retry policy")
    assert found.hits[0].label == "Class" and found.hits[0].name == "client.http.RetryPolicy"
    assert found.hits[0].description.endswith("http.py:4-9")  # the repository is the folder named
    [delay] = [h for h in found.hits if h.name.endswith("RetryPolicy.delay")]
    assert [s.text for s in delay.support] == [NOTES]

    result = await kb.retrieve("where is the retry policy implemented?")
    assert result.entities[0].name == "client.http.RetryPolicy"
    assert {e.label for e in result.entities} >= {"Class", "Function"}
    assert {p.text for p in result.passages} >= {NOTES, "The RetryPolicy class has one method."}
    linked = await run(
        tk,
        "cypher_query",
        {"query": "MATCH (c:Chunk)-[:MENTIONS]->(s:Class) RETURN s.qualname AS q, c.text AS t"},
        CypherResult,
    )
    assert linked.rows == [{"q": "RetryPolicy", "t": "The RetryPolicy class has one method."}]


async def test_the_ontology_describes_the_code_tables(kb: KnowledgeBase, root: Path) -> None:
    tk = Toolkit(kb, files_root=root)
    await run(tk, "ingest_code", {"paths": ["client"]}, IngestCodeResult)
    ontology = await run(tk, "get_ontology", {}, OntologyResult)
    tables = {t.name: t for t in ontology.tables}
    assert {"Repo", "Module", "Class", "Function", "CONTAINS", "IMPORTS", "CALLS", "INHERITS", "MENTIONS"} <= set(
        tables
    )
    assert {"signature", "docstring", "line_start", "line_end", "calls"} <= set(tables["Function"].properties)
    assert "search_text" not in tables["Function"].properties
    assert "(:Function)-[:CALLS]->(:Function)" in ontology.cypher_guide
    # the guide's example runs as written
    rows = await run(
        tk,
        "cypher_query",
        {
            "query": "MATCH (f:Function)-[:CALLS]->(g:Function) WHERE g.qualname = 'RetryPolicy.delay' "
            "RETURN f.module, f.qualname"
        },
        CypherResult,
    )
    assert rows.rows == [{"f.module": "client.http", "f.qualname": "fetch"}]
