"""Citation metadata over REST on a real `evigraph serve`: render_citations and check_citations
judged per session (a passage read whole in one session is not read in another), the source
list as plain text, and bad input refused naming the fix."""

from __future__ import annotations

import pytest
from tests.api.conftest import call_tool, error_of, rest_client
from tests.mcp.conftest import HttpServer

pytestmark = pytest.mark.slow


async def test_strict_citations_follow_what_each_session_read(api_server: HttpServer) -> None:
    async with rest_client(api_server, session="reader") as a, rest_client(api_server, session="skimmer") as b:
        hit_a = (await call_tool(a, "search_passages", {"query": "Harbor Lab", "mode": "lexical"}))["hits"][0]
        hit_b = (await call_tool(b, "search_passages", {"query": "Harbor Lab", "mode": "lexical"}))["hits"][0]
        assert hit_a["evidence_id"] == hit_b["evidence_id"]
        [read] = (await call_tool(a, "read_passages", {"passages": [hit_a["n"]]}))["passages"]

        ruled = {"evidence": [hit_a["evidence_id"]], "strict": True}
        [mine] = (await call_tool(a, "check_citations", ruled))["verdicts"]
        [theirs] = (await call_tool(b, "check_citations", ruled))["verdicts"]
        assert mine["verdict"] == "citable" and mine["read_in_full"] and mine["version"] == read["version"]
        assert theirs["verdict"] == "not_read" and "read_passages" in theirs["hint"]

        listed = await call_tool(a, "render_citations", ruled)
        assert listed["markdown"].startswith(f"- [{hit_a['n']}] {read['source']['title']}, ")
        text = await a.post("/api/tools/render_citations", json=ruled, headers={"Accept": "text/plain"})
        assert text.status_code == 200 and text.text.startswith(listed["markdown"])
        skipped = await call_tool(b, "render_citations", ruled)
        assert skipped["markdown"] == "" and "not_read" in skipped["hint"]


async def test_bad_citation_input_is_refused_or_judged(api_server: HttpServer) -> None:
    async with rest_client(api_server, session="bad-input") as client:
        empty = error_of(await client.post("/api/tools/render_citations", json={}), 422)
        assert "give the answer" in str(empty)
        error_of(await client.post("/api/tools/check_citations", json={"evidence": [0]}), 422)
        judged = await call_tool(client, "check_citations", {"evidence": ["passage:", "[12]", "theme:nope"]})
        assert [v["verdict"] for v in judged["verdicts"]] == ["malformed", "unknown", "unknown"]
        assert "never handed out" in judged["verdicts"][1]["reason"] and judged["grounded"] is False
