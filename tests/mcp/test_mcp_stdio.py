"""`evigraph mcp` over stdio speaks the protocol itself (no SDK server): the handshake every
protocol revision uses, the SDK client in each mode, bad lines, bad params, cancellation, and
that the process never imports the SDK (its cold start is the reason the server exists)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from tests.mcp.conftest import CALL_TIMEOUT_S, QUESTION, READ_TOOLS, call, child_env, stdio_params

from evigraph import KnowledgeBase
from evigraph.mcp.stdio import PROTOCOL_VERSIONS, StdioServer
from evigraph.serving.backend import LocalBackend, Reply
from evigraph.tools.definitions import ToolSpec
from evigraph.tools.toolkit import Toolkit


def test_protocol_versions_are_the_sdks_handshake_revisions() -> None:
    """A new SDK revision fails here, so its changes are read before this server claims it."""
    assert PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert PROTOCOL_VERSIONS[-1] == LATEST_HANDSHAKE_VERSION


class Wire:
    """Raw JSON-RPC lines to and from a fresh `evigraph mcp` process."""

    def __init__(self, db: Path, *args: str) -> None:
        params = stdio_params(db, *args)
        self.proc = subprocess.Popen(
            [params.command, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=params.env,
            cwd=params.cwd,
        )

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        raw = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the server closed stdout: {self.close()}"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def request(self, request_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        reply = self.reply()
        assert reply["id"] == request_id
        return reply

    def close(self) -> str:
        """Close stdin, which ends the server; its stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        return self.proc.stderr.read().decode()


def hello(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


def test_handshake_bad_lines_and_bad_requests_over_the_wire(db_copy: Path) -> None:
    wire = Wire(db_copy)
    try:
        discover = wire.request(0, "server/discover", {})
        assert discover["error"]["code"] == -32601  # the stateless era is not offered: clients fall back
        oldest = wire.request(1, "initialize", hello("2024-11-05"))["result"]
        assert oldest["protocolVersion"] == "2024-11-05"
        assert oldest["serverInfo"]["name"] == "evigraph"
        assert oldest["capabilities"] == {"tools": {"listChanged": False}}
        assert "retrieve" in oldest["instructions"]
        unknown = wire.request(2, "initialize", hello("1999-01-01"))["result"]
        assert unknown["protocolVersion"] == LATEST_HANDSHAKE_VERSION
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        wire.send(b"{this is not json\n")  # skipped and logged; the session goes on
        wire.send(b"\n")
        assert wire.request(3, "ping")["result"] == {}
        wire.send({"jsonrpc": "2.0", "id": [3], "method": "ping"})  # an id no reply could carry back
        assert wire.reply() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "a request id is a string or an integer"},
        }
        assert wire.request("three", "ping")["result"] == {}
        assert wire.request(4, "resources/list")["error"] == {
            "code": -32601,
            "message": "Method not found",
            "data": "resources/list",
        }
        bad = wire.request(5, "tools/call", {"name": ["retrieve"], "arguments": "who?"})
        assert bad["error"]["code"] == -32602 and "tool name" in bad["error"]["message"]
        refused = wire.request(6, "tools/call", {"name": "retrieve", "arguments": {"question": ""}})["result"]
        assert refused["isError"] is True and "at least 1 character" in refused["content"][0]["text"]
        assert "structuredContent" not in refused
        found = wire.request(7, "tools/call", {"name": "retrieve", "arguments": {"question": QUESTION}})["result"]
        assert "isError" not in found and found["structuredContent"]["passages"]
        assert found["content"][0]["type"] == "text" and "[1]" in found["content"][0]["text"]
        listed = wire.request(8, "tools/list")["result"]["tools"]
        assert {t["name"] for t in listed} == READ_TOOLS
        retrieve = next(t for t in listed if t["name"] == "retrieve")
        assert retrieve["annotations"]["readOnlyHint"] is True
        assert retrieve["inputSchema"]["properties"]["question"]["maxLength"] == 2000
    finally:
        stderr = wire.close()
    assert wire.proc.returncode == 0, stderr
    assert "not JSON-RPC" in stderr


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_in_each_mode(db_copy: Path, tmp_path: Path, mode: str) -> None:
    with (tmp_path / "stderr.log").open("w", encoding="utf-8") as log:
        params = stdio_params(db_copy)
        async with Client(stdio_client(params, errlog=log), mode=mode, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            assert client.protocol_version == LATEST_HANDSHAKE_VERSION
            assert client.server_info is not None and client.server_info.name == "evigraph"
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == READ_TOOLS
            found = await call(client, "retrieve", {"question": QUESTION})
            assert found["passages"]
            checked = await call(client, "check_citations", {"answer": "Harbor Lab exists [1]."})
            assert checked["cited"] == [1] and checked["invalid"] == []  # one session over stdio


class Blocking:
    """The real backend, except that `retrieve` waits until cancelled, so a cancel can be sent mid-call."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend = backend
        self.started = asyncio.Event()

    def specs(self) -> list[ToolSpec]:
        return self.backend.specs()

    async def call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply:
        if name == "retrieve":
            self.started.set()
            await asyncio.Event().wait()
        return await self.backend.call(client, name, args)


async def test_cancelled_request_gets_no_reply_and_the_session_goes_on(db_copy: Path) -> None:
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    async with KnowledgeBase(db_copy, read_only=True) as kb:
        backend = Blocking(LocalBackend(Toolkit(kb, read_only=True)))
        with open(read_in, "rb") as stdin, open(write_out, "wb") as stdout, open(write_in, "wb") as feed:
            server = asyncio.create_task(StdioServer(backend, stdin, stdout).serve())

            def send(message: dict[str, Any]) -> None:
                feed.write(json.dumps(message).encode() + b"\n")
                feed.flush()

            send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "retrieve", "arguments": {}}})
            await asyncio.wait_for(backend.started.wait(), 30)
            send({"jsonrpc": "2.0", "id": 1, "method": "ping"})  # the id of a request still running
            with open(read_out, "rb") as replies:
                reused = json.loads(await asyncio.to_thread(replies.readline))
                assert reused["id"] == 1 and reused["error"]["code"] == -32600
                assert "already in use" in reused["error"]["message"]
                send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
                send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}})
                line = await asyncio.to_thread(replies.readline)
                first = json.loads(line)
                assert first["id"] == 2 and "isError" not in first["result"]
                feed.close()  # end of input: the server returns
                await asyncio.wait_for(server, 30)
                stdout.close()
                assert replies.read() == b""  # nothing was ever sent for the cancelled request


def test_stdio_server_never_imports_the_sdk(db_copy: Path) -> None:
    """The SDK's import was half of a cold first answer; only HTTP and SSE may load it."""
    code = (
        "import sys\nfrom evigraph.cli import main\n"
        f"sys.argv = ['evigraph', 'mcp', '--db', {str(db_copy)!r}]\n"
        "code = main()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'httpx', 'starlette')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello("2025-11-25")}) + "\n",
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    first, loaded = proc.stdout.strip().splitlines()
    assert json.loads(first)["result"]["serverInfo"]["name"] == "evigraph"
    assert loaded == "[]"
