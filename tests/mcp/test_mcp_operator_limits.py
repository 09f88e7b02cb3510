"""Operator limits set on `evigraph mcp` (flags and EVIGRAPH_* variables), seen through the MCP SDK's client:
the input schemas, the refusals, the snippets and the response size follow them; flags win over variables."""

from __future__ import annotations

import json
from pathlib import Path

from tests.mcp.conftest import call, error_text, stdio_mcp_client


async def test_limits_from_flags_and_environment_reach_the_tools(db_copy: Path, tmp_path: Path) -> None:
    env = {
        "EVIGRAPH_MAX_HITS": "9",  # the flag below wins
        "EVIGRAPH_MAX_FETCH_IDS": "2",
        "EVIGRAPH_MAX_SNIPPET_CHARS": "50",
        "EVIGRAPH_MAX_RESPONSE_CHARS": "10000",
    }
    with (tmp_path / "stderr.log").open("w", encoding="utf-8") as log:
        async with stdio_mcp_client(
            db_copy, "--read-only", "--max-hits", "3", "--read-deadline-seconds", "4", env=env, errlog=log
        ) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["search_passages"].input_schema["properties"]["limit"]["maximum"] == 3
            assert tools["retrieve"].input_schema["properties"]["top_k"]["maximum"] == 3
            assert tools["read_passages"].input_schema["properties"]["passages"]["maxItems"] == 2
            assert "a 4 s time limit" in (tools["cypher_query"].description or "")

            refused = await error_text(client, "search_passages", {"query": "Harbor Lab", "limit": 4})
            assert "less than or equal to 3" in refused and "the server's max_hits" in refused

            found = await call(client, "search_passages", {"query": "Harbor Lab", "mode": "lexical"})
            assert 0 < len(found["hits"]) <= 3
            assert all(len(hit["text"]) <= 52 for hit in found["hits"]), found["hits"]
            numbers = [hit["n"] for hit in found["hits"]]
            refused = await error_text(client, "read_passages", {"passages": [numbers[0]] * 3})
            assert "at most 2 items" in refused

            retrieved = await call(client, "retrieve", {"question": "Who founded Harbor Lab?", "top_k": 3})
            assert len(json.dumps(retrieved, ensure_ascii=False)) <= 10_000
    said = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "limits: max_hits 3, max_fetch_ids 2, max_snippet_chars 50, max_response_chars 10000" in said
    assert "read_deadline_seconds 4" in said
