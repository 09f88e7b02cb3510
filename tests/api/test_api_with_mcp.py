"""`evigraph serve --with-mcp`: MCP at /mcp in the same process, on the same open knowledge base,
so what one surface writes the other reads at once (the embedded database has one writer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.api.conftest import call_tool, rest_client, serving
from tests.mcp.conftest import HttpServer, call, copy_db, http_client

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def both(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    db = copy_db(sample_db, tmp_path_factory.mktemp("api-mcp"))
    with serving(db.parent, "--db", str(db), "--allow-writes", "--with-mcp") as server:
        yield server


async def test_rest_and_mcp_share_one_knowledge_base(both: HttpServer) -> None:
    assert f"MCP (streamable HTTP) at {both.base}/mcp" in both.stderr()
    async with rest_client(both, session="rest") as rest, http_client(f"{both.base}/mcp") as mcp:
        listed = (await rest.get("/api/tools")).json()["tools"]
        assert [t.name for t in (await mcp.list_tools()).tools] == [t["name"] for t in listed]

        note = {"text": "Quarry Lab is a workshop in Braga, founded by Ines Duarte.", "document_key": "quarry"}
        assert (await call_tool(rest, "ingest", note))["documents"][0]["status"] == "ingested"
        seen = await call(mcp, "search_passages", {"query": "Quarry Lab"})
        assert any("Braga" in hit["text"] for hit in seen["hits"])

        other = {"text": "Dune Station is a weather post in Peniche.", "document_key": "dune"}
        assert (await call(mcp, "ingest", other))["documents"][0]["status"] == "ingested"
        found = await call_tool(rest, "search_passages", {"query": "Dune Station"})
        assert any("Peniche" in hit["text"] for hit in found["hits"])
        assert (await call_tool(rest, "status"))["documents"] == 5


async def test_mcp_keeps_its_host_check_when_mounted(both: HttpServer) -> None:
    async with rest_client(both, headers={"Host": f"evil.example:{both.port}"}) as foreign:
        assert (await foreign.post("/mcp", json={})).status_code == 421
