"""Network safety: no token, no network; with one, every request needs it; loopback checks Host and Origin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from tests.mcp.conftest import (
    QUESTION,
    HttpServer,
    call,
    child_env,
    free_port,
    http_client,
    running,
    sse_mcp_client,
)

pytestmark = pytest.mark.slow
TOKEN = "s3cret-token-for-tests"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post_status(url: str, headers: dict[str, str]) -> int:
    """Status of a raw MCP initialize POST (the response body is not read: it may be a stream)."""
    with (
        httpx2.Client(timeout=30) as http,
        http.stream("POST", url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}) as response,
    ):
        return response.status_code


def get_status(url: str, headers: dict[str, str]) -> int:
    with httpx2.Client(timeout=30) as http, http.stream("GET", url, headers=headers) as response:
        return response.status_code


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_non_loopback_without_token_does_not_start(transport: str, db_copy: Path) -> None:
    network = ["--host", "0.0.0.0", "--port", str(free_port())]
    proc = subprocess.run(
        [sys.executable, "-m", "evigraph", "mcp", "--db", str(db_copy), "--transport", transport, *network],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(EVIGRAPH_MCP_TOKEN=""),
    )
    assert proc.returncode != 0
    assert "EVIGRAPH_MCP_TOKEN" in proc.stderr
    assert "Traceback" not in proc.stderr


async def test_http_with_token_needs_it_on_every_request(db_copy: Path) -> None:
    with running(db_copy, "http", host="0.0.0.0", env={"EVIGRAPH_MCP_TOKEN": TOKEN}) as server:
        url = server.url
        assert post_status(url, {}) == 401
        assert post_status(url, {"Authorization": "Bearer wrong-token"}) == 401
        assert post_status(url, {"Authorization": TOKEN}) == 401  # no scheme
        assert post_status(url, {"Authorization": f"bearer {TOKEN}"}) == 200  # the scheme is case-insensitive
        # Off loopback, clients name the server by addresses and DNS names it cannot know: the token guards it.
        remote = {"Authorization": f"BEARER {TOKEN}", "Host": f"evigraph-box.lan:{server.port}"}
        assert post_status(url, remote) == 200

        async with http_client(url, {"Authorization": f"Bearer {TOKEN}"}) as client:
            assert (await call(client, "retrieve", {"question": QUESTION}))["passages"]
        assert TOKEN not in server.stderr()


async def test_sse_with_token_needs_it(db_copy: Path) -> None:
    with running(db_copy, "sse", host="0.0.0.0", env={"EVIGRAPH_MCP_TOKEN": TOKEN}) as server:
        assert get_status(server.url, {}) == 401
        assert post_status(server.url.replace("/sse", "/messages/?session_id=x"), {}) == 401
        async with sse_mcp_client(server.url, {"Authorization": f"Bearer {TOKEN}"}) as client:
            assert (await call(client, "retrieve", {"question": QUESTION}))["passages"]


def test_loopback_http_refuses_foreign_host_and_origin(http_server: HttpServer) -> None:
    url, port = http_server.url, http_server.port
    assert post_status(url, {"Origin": f"http://127.0.0.1:{port}"}) == 200
    assert post_status(url, {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}) == 200

    foreign_host = post_status(url, {"Host": f"evil.example:{port}"})
    assert 400 <= foreign_host < 500, foreign_host
    foreign_origin = post_status(url, {"Origin": "http://evil.example"})
    assert 400 <= foreign_origin < 500, foreign_origin
    other_port = post_status(url, {"Origin": f"http://127.0.0.1:{port + 1}"})
    assert 400 <= other_port < 500, other_port


def test_loopback_sse_refuses_foreign_host_and_origin(sse_server: HttpServer) -> None:
    url, port = sse_server.url, sse_server.port
    foreign_host = get_status(url, {"Host": f"evil.example:{port}"})
    assert 400 <= foreign_host < 500, foreign_host
    foreign_origin = get_status(url, {"Origin": "http://evil.example"})
    assert 400 <= foreign_origin < 500, foreign_origin
    messages = url.replace("/sse", "/messages/?session_id=00000000000000000000000000000000")
    posted = post_status(messages, {"Host": f"evil.example:{port}"})
    assert 400 <= posted < 500, posted


def test_a_read_only_setting_that_is_not_yes_or_no_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from evigraph.errors import ConfigurationError
    from evigraph.mcp.main import McpConfig

    monkeypatch.setenv("EVIGRAPH_MCP_READ_ONLY", "maybe")
    with pytest.raises(ConfigurationError, match="EVIGRAPH_MCP_READ_ONLY"):
        McpConfig.from_env(db="kb.db")
    monkeypatch.setenv("EVIGRAPH_MCP_READ_ONLY", "Yes")
    assert McpConfig.from_env(db="kb.db").read_only is True
