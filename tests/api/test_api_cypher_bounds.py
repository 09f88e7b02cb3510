"""Free-form Cypher that once crashed or stalled a server, through REST and MCP: refused, and the
server keeps answering; on a read-only server (the default) a query runs in a worker process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.api.conftest import call_tool, error_of, rest_client, serving
from tests.mcp.conftest import HttpServer, call, copy_db, error_text, numbers, stdio_mcp_client
from tests.mcp.conftest import db_copy as db_copy  # the fixture, shared with the MCP tests

pytestmark = pytest.mark.slow

NESTED_800 = "RETURN " + "lower(" * 800 + "'x'" + ")" * 800 + " AS x"  # SIGSEGV in the engine, once
NESTED_10K = "RETURN " + "lower(" * 10_000 + "'x'" + ")" * 10_000 + " AS x"
LISTS_300 = "RETURN " + "[" * 300 + "1" + "]" * 300 + " AS x"  # 30 s of parsing under the interpreter lock, once
DOUBLED = "WITH 'xxxxxxxxxx' AS s " + " ".join(["WITH s + s AS s"] * 26) + " RETURN size(s) AS n"  # 5.45 GB, once
QUESTION = "Who founded Harbor Lab?"


@pytest.fixture(scope="module")
def read_only_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    db = copy_db(sample_db, tmp_path_factory.mktemp("api-ro"))
    with serving(db.parent, "--db", str(db)) as server:
        yield server


@pytest.fixture(params=["read_only_server", "api_server"])
def server(request: pytest.FixtureRequest) -> HttpServer:
    """A read-only `evigraph serve` (Cypher in a worker) and one with writes (Cypher in its process)."""
    found: HttpServer = request.getfixturevalue(request.param)
    return found


async def test_rest_refuses_what_crashed_or_stalled_a_server_and_keeps_serving(server: HttpServer) -> None:
    async with rest_client(server, session="bounds") as client:
        for query in (NESTED_800, LISTS_300, DOUBLED):
            body = error_of(await client.post("/api/tools/cypher_query", json={"query": query}), 400)
            assert body["kind"] == "tool" and "(" in body["error"], body  # refused, with its hint
        body = error_of(await client.post("/api/tools/cypher_query", json={"query": NESTED_10K}), 422)
        assert "query" in str(body)  # longer than the tool takes
        rows = await call_tool(client, "cypher_query", {"query": "MATCH (e:Entity) RETURN count(e) AS n"})
        assert rows["rows"][0]["n"] > 0
        assert (await call_tool(client, "retrieve", {"question": QUESTION}))["passages"]
    assert server.proc.poll() is None


async def test_mcp_refuses_what_crashed_a_server_and_keeps_serving(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy) as client:
        for query in (NESTED_800, LISTS_300, DOUBLED):
            text = await error_text(client, "cypher_query", {"query": query})
            assert "(" in text, text  # refused, with a hint
        text = await error_text(client, "cypher_query", {"query": NESTED_10K})
        assert "query" in text
        assert numbers(await call(client, "retrieve", {"question": QUESTION}))
