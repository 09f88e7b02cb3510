"""Every toolkit tool over stdio, streamable HTTP and SSE, with the SDK's own client on the real server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client
from tests.mcp.conftest import (
    DESTRUCTIVE_TOOLS,
    FILES_ROOT_TOOLS,
    QUESTION,
    READ_TOOLS,
    SAMPLE,
    call,
    citations,
    http_client,
    running,
    sse_mcp_client,
    stdio_mcp_client,
)

from evigraph import KnowledgeBase, Toolkit
from evigraph.serving.forwarding import pointer_path

pytestmark = pytest.mark.slow
TRANSPORTS = ("stdio", "http", "sse")


@contextlib.asynccontextmanager
async def connect(transport: str, request: pytest.FixtureRequest, db: Path) -> AsyncIterator[Client]:
    """A client on the shared HTTP/SSE server, or on a fresh stdio server with a files root over `db`."""
    if transport == "stdio":
        async with stdio_mcp_client(db, "--files-root", str(SAMPLE)) as client:
            yield client
    elif transport == "http":
        async with http_client(request.getfixturevalue("http_server").url) as client:
            yield client
    else:
        async with sse_mcp_client(request.getfixturevalue("sse_server").url) as client:
            yield client


async def toolkit_specs(db: Path, files_root: Path | None) -> dict[str, dict[str, object]]:
    async with KnowledgeBase(db, read_only=True) as kb:
        specs = Toolkit(kb, files_root=files_root).tool_specs()
    return {s.name: {"description": s.description, "input_schema": s.input_schema} for s in specs}


def passage_with(retrieved: dict[str, object], text: str) -> int:
    passages = retrieved["passages"]
    assert isinstance(passages, list)
    for p in passages:
        if text in p["text"]:
            n: int = p["n"]
            return n
    raise AssertionError(f"no retrieved passage contains {text!r}")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tools_annotations_retrieve_and_citations(
    transport: str, request: pytest.FixtureRequest, db_copy: Path
) -> None:
    expected_specs = await toolkit_specs(db_copy, SAMPLE if transport == "stdio" else None)
    async with connect(transport, request, db_copy) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        served = READ_TOOLS | DESTRUCTIVE_TOOLS | (FILES_ROOT_TOOLS if transport == "stdio" else set())
        assert set(tools) == served
        for name, tool in tools.items():
            a = tool.annotations
            assert a is not None, name
            assert a.read_only_hint is (name in READ_TOOLS), name
            assert a.destructive_hint is (name in DESTRUCTIVE_TOOLS | {"ingest_code"}), name
            assert a.idempotent_hint is not None and a.open_world_hint is not None, name
            if name in expected_specs:  # same schema and description as the toolkit registry
                assert tool.input_schema == expected_specs[name]["input_schema"], name
                assert tool.description == expected_specs[name]["description"], name

        instructions = client.instructions or ""
        for step in ("retrieve", "check_citations", "set_ontology", "ingest", "finalize"):
            assert step in instructions, step
        assert ("preview_files" in instructions) is (transport == "stdio")

        retrieved = await call(client, "retrieve", {"question": QUESTION})
        n = passage_with(retrieved, "Marta Oliveira")
        good = await citations(client, f"Marta Oliveira founded Harbor Lab in 2014 [{n}].")
        assert good["grounded"] is True
        assert good["cited"] == [n] and good["invalid"] == []

        bad = await citations(client, "Harbor Lab was founded on the Moon [9999].")
        assert bad["grounded"] is False
        assert bad["invalid"] == [9999]
        assert "9999" not in bad["answer"]  # the invalid number is removed from the answer


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_read_only_server_lists_no_write_tool(transport: str, db_copy: Path) -> None:
    async def check(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == READ_TOOLS
        assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())
        instructions = client.instructions or ""
        assert "retrieve" in instructions and "check_citations" in instructions
        for write_step in ("set_ontology", "ingest", "finalize", "preview_files", "To build"):
            assert write_step not in instructions, write_step
        refused = await client.call_tool("ingest", {"text": "x", "document_key": "x"})
        assert refused.is_error
        retrieved = await call(client, "retrieve", {"question": QUESTION})
        assert retrieved["passages"]

    if transport == "stdio":  # read-only from the environment here, from the flag below
        env = {"EVIGRAPH_MCP_READ_ONLY": "true"}
        async with stdio_mcp_client(db_copy, env=env) as client:
            await check(client)
        return
    with running(db_copy, transport, "--read-only") as server:
        assert pointer_path(db_copy).exists()  # it serves the database to other evigraph processes
        if transport == "http":
            async with http_client(server.url) as client:
                await check(client)
        else:
            async with sse_mcp_client(server.url) as client:
                await check(client)
    # Stopped with SIGTERM: a clean shutdown that closes the database and removes its pointer.
    assert server.proc.returncode == 0, server.stderr()
    assert not pointer_path(db_copy).exists()
