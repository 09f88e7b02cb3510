"""Errors come back as tool results an agent can act on; over stdio, stdout carries only the protocol."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from tests.mcp.conftest import QUESTION, call, child_env, error_text, numbers, stdio_mcp_client

from evigraph import KnowledgeBase, Toolkit
from evigraph.errors import EngineError
from evigraph.mcp.server import build_server
from evigraph.serving.backend import LocalBackend

pytestmark = pytest.mark.slow
SECRET = "sk-live-0123456789abcdef"


async def test_tool_errors_and_bad_arguments_come_back_as_results(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy) as client:
        # A ToolError: its message, then its hint.
        text = await error_text(client, "read_passages", {"passages": [9999]})
        assert "[9999] is not evidence of this session" in text
        assert "use a number a tool returned in this session" in text

        text = await error_text(client, "cypher_query", {"query": "MATCH (c:Chunk) DELETE c"})
        assert "read" in text.lower() and "(" in text  # refused as a write, with a hint

        # Bad arguments: what is wrong, and what the tool takes.
        text = await error_text(client, "retrieve", {"question": ""})
        assert "invalid arguments for retrieve" in text and "question" in text
        assert "retrieve takes: question" in text
        text = await error_text(client, "retrieve", {"question": QUESTION, "top_k": 500})
        assert "top_k" in text and "less than or equal to 50" in text
        text = await error_text(client, "retrieve", {"question": QUESTION, "topk": 5})
        assert "topk" in text and "Extra inputs are not permitted" in text
        text = await error_text(client, "retrieve", {})
        assert "question" in text and "Field required" in text
        text = await error_text(client, "no_such_tool", {})
        assert "unknown tool 'no_such_tool'" in text and "retrieve" in text

        # The server is still fine afterwards.
        assert numbers(await call(client, "retrieve", {"question": QUESTION}))


async def test_stdout_carries_only_the_protocol(db_copy: Path) -> None:
    """Raw JSON-RPC over stdio with debug logging on: every stdout line is a protocol message, logs go to stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "evigraph", "mcp", "--db", str(db_copy)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(EVIGRAPH_LOG_LEVEL="DEBUG"),
        cwd=db_copy.parent,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    seen: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        await proc.stdin.drain()

    async def answer(request_id: int) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
            assert line, "the server closed stdout"
            message = json.loads(line)  # anything that is not JSON fails here
            assert message.get("jsonrpc") == "2.0", line
            seen.append(message)
            if message.get("id") == request_id:
                return message

    def tool_call(request_id: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": args}
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    try:
        await send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "0"},
                },
            }
        )
        assert "retrieve" in (await answer(1))["result"]["instructions"]
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len((await answer(2))["result"]["tools"]) > 10
        await send(tool_call(3, "retrieve", {"question": QUESTION}))
        assert (await answer(3))["result"]["structuredContent"]["passages"]
        await send(tool_call(4, "read_passages", {"passages": [9999]}))
        assert (await answer(4))["result"]["isError"] is True
        await send(tool_call(5, "retrieve", {"question": ""}))
        assert (await answer(5))["result"]["isError"] is True
        await send(tool_call(6, "status", {}))
        assert not (await answer(6))["result"].get("isError")
        proc.stdin.close()
        rest, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    for line in rest.splitlines():
        assert json.loads(line).get("jsonrpc") == "2.0", line
    assert proc.returncode == 0, err.decode(errors="replace")
    assert b"evigraph" in err or b"mcp" in err, "debug logging wrote nothing to stderr"


async def test_other_failures_are_masked_and_logged(
    db_copy: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure that is not a ToolError: its kind and a next step for the agent, details only in the log.

    No request from outside can make a real knowledge base fail this way, so the server object is
    driven in process, by the SDK client, over a knowledge base whose retrieve breaks.
    """
    monkeypatch.setenv("EVIGRAPH_MCP_TOKEN", "tok-0123456789")

    async def broken(*args: object, **kwargs: object) -> None:
        raise EngineError(f"buffer manager exhausted (api_key={SECRET}, token tok-0123456789)")

    monkeypatch.setattr(KnowledgeBase, "retrieve", broken)
    async with KnowledgeBase(db_copy, read_only=True) as kb:
        server = build_server(LocalBackend(Toolkit(kb, read_only=True)))
        with caplog.at_level(logging.ERROR, logger="evigraph.mcp"):
            async with Client(server) as client:
                text = await error_text(client, "retrieve", {"question": QUESTION})
    assert text.startswith("retrieve failed (database error). Next step:")
    assert SECRET not in text and "buffer manager" not in text
    logged = caplog.text
    assert "buffer manager exhausted" in logged  # the full message goes to the log...
    assert SECRET not in logged and "tok-0123456789" not in logged  # ...with secrets masked
