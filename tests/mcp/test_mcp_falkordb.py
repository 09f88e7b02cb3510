"""The MCP server over streamable HTTP on a FalkorDB-backed knowledge base: the same tools, the
same evidence numbers and citation checks as on the embedded file, through the SDK's own client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import FalkorServer
from tests.mcp.conftest import HttpServer, call, child_env, citations, free_port, http_client, numbers, wait_for_port


@pytest.fixture
def falkordb(falkordb_server: FalkorServer) -> str:
    return falkordb_server.url("mcp_kb")


@pytest.fixture
def served(falkordb: str, tmp_path: Path) -> Iterator[HttpServer]:
    port = free_port()
    log = tmp_path / "mcp.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "evigraph",
                "mcp",
                "--db",
                falkordb,
                "--transport",
                "http",
                "--port",
                str(port),
                "--allow-writes",
            ],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            env=child_env(),
            cwd=tmp_path,
        )
    server = HttpServer(proc, "127.0.0.1", port, "http", log)
    try:
        wait_for_port(proc, port, log)
        yield server
    finally:
        server.stop()


async def test_ingest_retrieve_and_check_citations_on_falkordb(served: HttpServer) -> None:
    async with http_client(served.url) as client:
        text = (
            "ReefWatch is funded by the Harbour Trust. Marta Oliveira leads ReefWatch from Porto. "
            "The grant covers two survey boats."
        )
        report = await call(client, "ingest", {"text": text, "document_key": "reefwatch"})
        assert [d["status"] for d in report["documents"]] == ["ingested"]
        found = await call(client, "retrieve", {"question": "Who funds ReefWatch?"})
        passages = [p for p in found["passages"] if "Harbour Trust" in p["text"]]
        assert passages and passages[0]["n"] in numbers(found)
        n = passages[0]["n"]
        checked = await citations(client, f"The Harbour Trust funds ReefWatch [{n}].")
        assert checked["grounded"] and checked["cited"] == [n]
        wrong = await citations(client, "The City of Lisbon funds ReefWatch [999].")
        assert wrong["invalid"] == [999] and wrong["grounded"] is False
    assert "falkordb://127.0.0.1" in served.stderr()
