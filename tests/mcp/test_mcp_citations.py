"""Citation metadata over MCP through the SDK's own client: read_passages names the version it
read, check_citations judges each number or evidence id (strict: only passages read whole), and
render_citations turns them into a markdown source list."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.conftest import call, error_text, stdio_mcp_client


async def test_citation_verdicts_and_source_list_over_stdio(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["render_citations"].input_schema["properties"].keys() == {"answer", "evidence", "strict"}
        hits = (await call(client, "search_passages", {"query": "Harbor Lab", "mode": "lexical"}))["hits"]
        read_n, snippet_n = hits[0]["n"], hits[1]["n"]
        [read] = (await call(client, "read_passages", {"passages": [read_n]}))["passages"]
        assert read["current"] is True and read["version"] >= 1 and len(read["content_hash"]) == 64

        checked = await call(
            client,
            "check_citations",
            {"evidence": [read_n, hits[1]["evidence_id"], "banana", 999], "strict": True},
        )
        verdicts = {v["ref"]: v for v in checked["verdicts"]}
        assert verdicts[f"[{read_n}]"]["verdict"] == "citable"
        assert verdicts[f"[{read_n}]"]["content_hash"] == read["content_hash"]
        snippet = verdicts[hits[1]["evidence_id"]]
        assert snippet["verdict"] == "not_read" and f"read_passages on [{snippet_n}]" in snippet["hint"]
        assert verdicts["banana"]["verdict"] == "malformed" and verdicts["[999]"]["verdict"] == "unknown"
        assert checked["grounded"] is False

        rendered = await call(
            client, "render_citations", {"answer": f"Harbor Lab [{read_n}] is in Lisbon [{snippet_n}].", "strict": True}
        )
        where = read["source"]
        assert rendered["markdown"] == (
            f"- [{read_n}] {where['title']}, {where['path']}, version {read['version']}, "
            f"chars {where['start']}-{where['end']}"
        )
        assert f"[{snippet_n}] not_read" in rendered["hint"]

        loose = await call(client, "render_citations", {"evidence": [read_n, snippet_n]})
        assert len(loose["markdown"].splitlines()) == 2

        refused = await error_text(client, "render_citations", {})
        assert "give the answer" in refused
