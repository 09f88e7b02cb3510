"""Code symbols as first-class nodes of the tools: `explore_relationships` from a symbol's number,
id or name, `status` counting the code, the agents' guide to Cypher for code, and what an ingest
reports of the passages it linked. All on a real embedded knowledge base."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.code.conftest import CLASS_NOTE, DELAY, HTTP, NOTES, POLICY, write_client
from tests.tools.conftest import run

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.cli import main
from evigraph.code_records import CODE_LABELS, CODE_LINKS, CODE_QUERIES, SYMBOL_LINK_TYPES
from evigraph.mcp.instructions import build_instructions
from evigraph.store.core.schema_names import CYPHER_GUIDE
from evigraph.tools.code_tools import IngestCodeResult
from evigraph.tools.graph_tools import CypherResult, EntitySearchResult, ExplorationResult, StatusResult


async def add_notes(kb: KnowledgeBase) -> None:
    await kb.ingest([], text=NOTES, key="notes/waits")
    await kb.ingest([], text=CLASS_NOTE, key="notes/class")


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    folder = write_client(tmp_path / "src")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as fresh:
        await add_notes(fresh)
        await fresh.ingest_code([folder])
        yield fresh


async def symbol_number(tk: Toolkit, query: str, name: str) -> int:
    found = await run(tk, "search_entities", {"query": query, "mode": "lexical"}, EntitySearchResult)
    [hit] = [h for h in found.hits if h.name == name]
    return hit.n


# -- explore_relationships -------------------------------------------------------------------


async def test_a_symbol_is_explored_from_its_number_id_evidence_id_or_name(kb: KnowledgeBase) -> None:
    tk = Toolkit(kb, read_only=True)
    n = await symbol_number(tk, "retry policy", "client.http.RetryPolicy")
    walks = [
        await run(tk, "explore_relationships", {"entity": ref}, ExplorationResult)
        for ref in (n, str(n), POLICY, f"entity:{POLICY}", "client.http.RetryPolicy")
    ]
    for walk in walks:
        assert walk.entity == f"entity:{POLICY}"
        assert [e.evidence_id for e in walk.edges] == [e.evidence_id for e in walks[0].edges]
    walk = walks[0]
    names = {e.name: e.label for e in walk.nodes}
    assert names == {
        "client.http.RetryPolicy": "Class",
        "client.http": "Module",  # its parent, CONTAINS in
        "client.http.RetryPolicy.delay": "Function",  # its method, CONTAINS out
        "client.http.Base": "Class",  # INHERITS
    }
    assert {(e.source, e.type, e.target) for e in walk.edges} == {
        ("client.http", "CONTAINS", "client.http.RetryPolicy"),
        ("client.http.RetryPolicy", "CONTAINS", "client.http.RetryPolicy.delay"),
        ("client.http.RetryPolicy", "INHERITS", "client.http.Base"),
    }
    assert {p.text for p in walk.passages} == {NOTES, CLASS_NOTE}  # the passages naming it
    assert all(x.n > 0 for x in (*walk.nodes, *walk.edges, *walk.passages))  # each cited in the session
    text = walk.to_llm_text()
    assert "client.http.RetryPolicy -[INHERITS]-> client.http.Base" in text
    assert "## Mentioned in" in text and CLASS_NOTE in text
    assert walk.hint is None and not walk.truncated


async def test_a_walk_reaches_callers_and_importers_and_keeps_its_bounds(kb: KnowledgeBase) -> None:
    tk = Toolkit(kb, read_only=True)
    far = await run(tk, "explore_relationships", {"entity": DELAY, "depth": 2}, ExplorationResult)
    edges = {(e.source, e.type, e.target, e.hop) for e in far.edges}
    assert ("client.http.fetch", "CALLS", "client.http.RetryPolicy.delay", 1) in edges
    assert ("client.api.get", "CALLS", "client.http.fetch", 2) in edges
    calls = await run(
        tk, "explore_relationships", {"entity": DELAY, "depth": 2, "relation_types": ["CALLS"]}, ExplorationResult
    )
    assert {e.type for e in calls.edges} == {"CALLS"}
    assert {e.name for e in calls.nodes} == {"client.http.RetryPolicy.delay", "client.http.fetch", "client.api.get"}
    module = await run(tk, "explore_relationships", {"entity": "Module:client:http.py"}, ExplorationResult)
    assert ("client.api", "IMPORTS", "client.http") in {(e.source, e.type, e.target) for e in module.edges}
    cut = await run(tk, "explore_relationships", {"entity": POLICY, "max_edges": 1}, ExplorationResult)
    assert len(cut.edges) == 1 and cut.truncated and cut.truncated_by == ["max_edges"]
    assert cut.hint is not None and "max_edges" in cut.hint
    none = await run(tk, "explore_relationships", {"entity": POLICY, "relation_types": ["FOUNDED"]}, ExplorationResult)
    assert none.edges == [] and none.hint is not None
    assert "CALLS" in none.hint and "INHERITS" in none.hint  # the types a symbol has
    # the Python method is the same walk
    walk = await kb.explore_relationships(DELAY, depth=2, relation_types=["CALLS"])
    assert {e.id for e in walk.nodes} == {n.id for n in calls.nodes}


async def test_an_unknown_or_removed_symbol_is_refused_with_the_fix(kb: KnowledgeBase, tmp_path: Path) -> None:
    tk = Toolkit(kb, read_only=True)
    with pytest.raises(ToolError) as missing:
        await tk.call("explore_relationships", {"entity": "Class:client:http.py#NoSuchPolicy"})
    assert "no code symbol 'Class:client:http.py#NoSuchPolicy'" in missing.value.message
    assert missing.value.hint is not None
    assert "search_entities" in missing.value.hint and "ingest_code" in missing.value.hint
    with pytest.raises(ToolError) as unnamed:
        await tk.call("explore_relationships", {"entity": "client.http.Nothing"})
    assert "no entity or code symbol 'client.http.Nothing'" in unnamed.value.message
    n = await symbol_number(tk, "retry policy", "client.http.RetryPolicy")
    (tmp_path / "src" / "client" / "http.py").write_text(HTTP.replace("RetryPolicy", "Backoff"), encoding="utf-8")
    await kb.ingest_code([tmp_path / "src" / "client"])  # the class is renamed: its number names it still
    with pytest.raises(ToolError, match="no code symbol") as gone:
        await tk.call("explore_relationships", {"entity": n})
    assert gone.value.hint is not None and "search_entities" in gone.value.hint
    with pytest.raises(ToolError, match="passage"):  # another kind's number is refused as before
        await tk.call("explore_relationships", {"entity": "passage:abc"})


# -- status ----------------------------------------------------------------------------------


async def test_status_counts_code_files_and_symbols(kb: KnowledgeBase) -> None:
    status = await kb.status()
    assert (status.code_repos, status.code_files, status.code_symbols) == (1, 3, {"Class": 2, "Function": 3})
    tk = Toolkit(kb, read_only=True)
    result = await run(tk, "status", {}, StatusResult)
    assert (result.code_files, result.code_symbols) == (3, {"Class": 2, "Function": 3})
    assert "Code: repositories: 1, files: 3, Class: 2, Function: 3." in result.to_llm_text()


async def test_status_of_a_knowledge_base_without_code_says_nothing_of_code(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest([], text=NOTES, key="notes/waits")
        status = await kb.status()
        assert (status.code_repos, status.code_files, status.code_symbols) == (0, 0, {})
        assert "Code" not in (await Toolkit(kb).call("status", {})).to_llm_text()


# -- what an ingest reports, and the CLI -----------------------------------------------------


async def test_the_report_counts_passages_and_symbols_not_links(tmp_path: Path) -> None:
    folder = write_client(tmp_path / "src")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await add_notes(kb)
        report = await kb.ingest_code([folder])
        # NOTES names three symbols, CLASS_NOTE one of them again: four links, two passages, three symbols
        assert (report.passages_linked, report.symbols_linked) == (2, 3)
        assert report.links_text() == "2 passages linked to 3 symbols"
        assert kb.store is not None
        links = await kb.store.cypher_query("MATCH (c:Chunk)-[:MENTIONS]->(s:Function) RETURN count(*) AS n")
        links += await kb.store.cypher_query("MATCH (c:Chunk)-[:MENTIONS]->(s:Class) RETURN count(*) AS n")
        assert sum(r["n"] for r in links) == 4
        again = await kb.ingest_code([folder])  # nothing new: nothing linked, nothing said
        assert (again.passages_linked, again.symbols_linked, again.links_text()) == (0, 0, "")
    files = tmp_path / "files"
    write_client(files)
    async with KnowledgeBase(tmp_path / "tool.db", extractor="rules") as kb:
        await kb.ingest([], text=CLASS_NOTE, key="notes/class")
        result = await run(Toolkit(kb, files_root=files), "ingest_code", {"paths": ["client"]}, IngestCodeResult)
        assert result.header().endswith("; 1 passage linked to 1 symbol")


def test_cli_ingest_code_and_status_say_what_was_linked_and_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_client(tmp_path / "src")
    db = tmp_path / "kb.db"

    async def notes() -> None:
        async with KnowledgeBase(db, extractor="rules") as kb:
            await add_notes(kb)

    asyncio.run(notes())
    assert main(["ingest-code", str(folder), "--db", str(db)]) == 0
    assert capsys.readouterr().out.strip().endswith(", 2 passages linked to 3 symbols")
    assert main(["status", "--db", str(db)]) == 0
    assert "code            repositories 1, files 3, Class 2, Function 3" in capsys.readouterr().out.splitlines()
    assert main(["status", "--db", str(db), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["code_repos"], status["code_files"], status["code_symbols"]) == (1, 3, {"Class": 2, "Function": 3})


# -- the agents' guide to code -----------------------------------------------------------------


def test_the_instructions_send_code_questions_to_cypher_in_the_schemas_names() -> None:
    tools = ["retrieve", "status", "get_ontology", "search_entities", "explore_relationships", "cypher_query"]
    text = build_instructions(tools)
    [step] = [line for line in text.splitlines() if "For source code" in line]
    for label in CODE_LABELS:
        assert f"(:{label})" in step
    for kind in SYMBOL_LINK_TYPES:
        assert f"[:{kind}]" in step
    for question, query in CODE_QUERIES[:1]:
        assert question in step and query in step
    assert "explore_relationships" in step and "search_entities" in step
    assert "For source code" not in build_instructions(["retrieve", "search_entities"])  # no Cypher, no step
    without = build_instructions(["cypher_query"])
    assert "For source code" in without and "explore_relationships" not in without
    # the Cypher guide names every code table and relationship from the same registry
    for kind, a, b in CODE_LINKS:
        assert f"[:{kind}]" in CYPHER_GUIDE and f"{a}" in CYPHER_GUIDE and f"{b}" in CYPHER_GUIDE
    for _, query in CODE_QUERIES:
        assert query in CYPHER_GUIDE


async def test_the_code_queries_run_as_written(kb: KnowledgeBase) -> None:
    """The examples' stand-in names swapped for this corpus's, each query answers through the tool."""
    tk = Toolkit(kb, read_only=True)
    swaps = {"'Retriever.search'": "'RetryPolicy.delay'", "'pkg.kb'": "'client.http'", "'Base'": "'Base'"}
    for question, query in CODE_QUERIES:
        for stand_in, name in swaps.items():
            query = query.replace(stand_in, name)
        if "IMPORTS" in query:
            query = query.replace("'client.http'", "'client.api'")
        rows = await run(tk, "cypher_query", {"query": query}, CypherResult)
        assert rows.rows, f"{question}: {query} found nothing"
