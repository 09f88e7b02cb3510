"""The `answer` tool over MCP, through the SDK's own client: served only when the server has an LLM,
its evidence numbers usable by `check_citations`, and the LLM's key never in the server's stderr."""

from __future__ import annotations

import re
from pathlib import Path

from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply
from tests.mcp.conftest import QUESTION, READ_TOOLS, call, citations, error_text, stdio_mcp_client


def _answer(request: Request) -> Reply:
    """Cites the evidence line that says who founded Harbor Lab, by the number the prompt gives it."""
    lines = dict(re.findall(r"^\[(\d+)\] (.*)$", request.prompt, re.MULTILINE))
    n = next(n for n, line in lines.items() if "founded in 2014 by Marta Oliveira" in line)
    return chat_reply(f"Marta Oliveira and Tomas Reyes founded Harbor Lab in 2014 [{n}].")


async def test_answer_is_served_only_with_an_llm(db_copy: Path, tmp_path: Path) -> None:
    async with stdio_mcp_client(db_copy) as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
        assert "answer drafts" not in (client.instructions or "")
        assert "not offered" in await error_text(client, "answer", {"question": QUESTION})

    log = tmp_path / "server.log"
    env = {"EVIGRAPH_LOG_LEVEL": "DEBUG"}  # httpx and our client log every request: none may show the key
    with ReplayServer(answer=_answer) as server, log.open("w", encoding="utf-8") as err:
        env |= {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_MODEL": "test-model", "EVIGRAPH_LLM_API_KEY": KEY}
        async with stdio_mcp_client(db_copy, env=env, errlog=err) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == READ_TOOLS | {"answer"}
            hints = tools["answer"].annotations
            assert hints is not None and hints.read_only_hint and not hints.destructive_hint
            assert tools["answer"].input_schema["properties"]["top_k"]["maximum"] == 50
            assert "answer drafts a cited answer" in (client.instructions or "")

            answered = await call(client, "answer", {"question": QUESTION, "top_k": 5})
            assert answered["verified"] is True and answered["status"] == "verified", answered["verdict"]
            n = answered["citations"]["cited"][0]
            assert n in {p["n"] for p in answered["passages"]}
            checked = await citations(client, f"Marta Oliveira founded Harbor Lab in 2014 [{n}].")
            assert checked["grounded"] and checked["cited"] == [n]  # the agent's own check knows the number

            server.answer = lambda request: error_reply(401, f"Bad key {request.header('authorization')}")
            refused = await error_text(client, "answer", {"question": QUESTION})
            assert "refused the API key (HTTP 401)" in refused and "EVIGRAPH_LLM_API_KEY" in refused
            assert KEY not in refused and "Bearer ***" in refused
        assert server.chat_requests()[0].header("authorization") == f"Bearer {KEY}"
    said = log.read_text(encoding="utf-8")
    assert "POST" in said and "chat/completions" in said  # the requests were logged...
    assert KEY not in said  # ...without the key
