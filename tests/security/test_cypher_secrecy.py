"""Agents' records stay out of free-form Cypher through the toolkit, on both stores, for a toolkit
with a project or without one and for a document-scoped one (which offers no free-form Cypher).

The store-level cases are in tests/store/contract/test_contract_cypher.py; this drives the same
attacks through `Toolkit.call`, as an MCP or REST client reaches them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import FalkorServer

from evigraph import KnowledgeBase, ToolError, Toolkit

GOAL = "goal-3b8d-private"
CONCLUSION = "conclusion-61fe-private"
ATTACKS = [
    "MATCH (n) WHERE id(n) >= 0 AND id(n) < 100000 AND n.project IS NOT NULL RETURN n",
    "MATCH (d:TraceDecision) RETURN d.conclusion AS c",
    "MATCH (e:Entity) WITH e MATCH (n) WHERE id(n) = id(e) + 1 RETURN n",
    "MATCH (a:Entity)-[*1..3]-(b) RETURN b",
    "MATCH (c:Chunk) RETURN c['embed' + 'ding'] AS x",
    "MATCH (c:Chunk) RETURN list_to_string(',', [c]) AS x",
]


@pytest.fixture(params=["embedded", "falkordb"])
def location(request: pytest.FixtureRequest, tmp_path: Path, falkordb_server: FalkorServer) -> str:
    if request.param == "embedded":
        return str(tmp_path / "kb.db")
    return falkordb_server.url(f"secrecy_{tmp_path.name}".replace("-", "_"))


async def test_no_toolkit_reads_agents_records_through_cypher(location: str) -> None:
    async with KnowledgeBase(location, extractor="rules", embedder="none") as kb:
        await kb.ingest(text="Ada Lovelace wrote notes on the Analytical Engine.", key="ada", title="Ada")
        writer = Toolkit(kb, project="p", agent="ann")
        await writer.call("create_task", {"task_name": "t", "goal": GOAL})
        [hit, *_] = (await writer.call("search_passages", {"query": "Ada Lovelace"})).model_dump()["hits"]
        await writer.call("read_passages", {"passages": [hit["n"]]})
        await writer.call(
            "record_decision",
            {
                "task_name": "t",
                "choice_key": "db",
                "conclusion": CONCLUSION,
                "rationale": "read",
                "supports": [{"kind": "passage", "evidence": hit["n"]}],
            },
        )
        toolkits = {
            "read-only": Toolkit(kb, read_only=True),
            "with a project": Toolkit(kb, read_only=True, project="p", agent="ann"),
            "writable": writer,
        }
        for name, toolkit in toolkits.items():
            for attack in ATTACKS:
                try:
                    result = await toolkit.call("cypher_query", {"query": attack})
                except ToolError as refused:
                    assert refused.hint, (name, attack)
                    continue
                shown = json.dumps(result.model_dump())
                assert GOAL not in shown and CONCLUSION not in shown, (name, attack)
    async with KnowledgeBase(location, read_only=True, scope=["ada"], embedder="none") as scoped:
        with pytest.raises(ToolError, match="scope"):
            await Toolkit(scoped, read_only=True).call("cypher_query", {"query": ATTACKS[0]})
