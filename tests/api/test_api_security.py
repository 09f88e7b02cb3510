"""The REST server's network safety, as the MCP HTTP transport's: loopback by default, Host and
Origin allow-lists there, no CORS unless an origin is given, and a token off loopback."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.api.conftest import INITIALIZE, MCP_ACCEPT, TOKEN, call_tool, error_of, rest_client, serving
from tests.mcp.conftest import QUESTION, HttpServer, copy_db

pytestmark = pytest.mark.slow
PAGE = "http://localhost:5173"
DB_HEADER = "x-evigraph-db"


async def test_off_loopback_every_api_call_needs_the_token(sample_db: Path, tmp_path: Path) -> None:
    db = copy_db(sample_db, tmp_path)
    with serving(tmp_path, "--db", str(db), host="0.0.0.0", env={"EVIGRAPH_MCP_TOKEN": TOKEN}) as server:
        async with rest_client(server) as anonymous:
            for path in ("/api/tools", "/api/dbs", "/api/openapi.json"):
                assert error_of(await anonymous.get(path), 401)["error"] == "unauthorized", path
            refused = await anonymous.post("/api/tools/status", json={})
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert (await anonymous.get("/api/health")).status_code == 200  # liveness, no data
            assert (await anonymous.get("/")).status_code == 200  # the UI's files hold no data either
            wrong = await anonymous.post("/api/tools/status", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            no_scheme = await anonymous.post("/api/tools/status", headers={"Authorization": TOKEN})
            assert no_scheme.status_code == 401
        # Off loopback, clients name the server by names it cannot know: the token guards it.
        remote = {"Authorization": f"bearer {TOKEN}", "Host": f"evigraph-box.lan:{server.port}"}
        async with rest_client(server, headers=remote) as client:
            assert (await call_tool(client, "retrieve", {"question": QUESTION}))["passages"]
            document = (await client.get("/api/openapi.json")).json()
            assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert TOKEN not in server.stderr()


async def test_a_token_given_on_loopback_is_required_too_and_guards_mcp(sample_db: Path, tmp_path: Path) -> None:
    db = copy_db(sample_db, tmp_path)
    with serving(tmp_path, "--db", str(db), "--token", TOKEN, "--with-mcp") as server:
        async with rest_client(server) as anonymous:
            assert (await anonymous.post("/api/tools/status")).status_code == 401
            assert (await anonymous.post("/mcp", json={})).status_code == 401
        async with rest_client(server, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            assert (await call_tool(client, "status"))["documents"] == 3


def test_loopback_refuses_a_foreign_host_or_origin(api_server: HttpServer) -> None:
    port = api_server.port
    with httpx.Client(base_url=api_server.base, timeout=30) as http:

        def status(headers: dict[str, str], path: str = "/api/tools") -> int:
            return http.get(path, headers=headers).status_code

        assert status({}) == 200
        assert status({"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}) == 200  # its own page
        assert status({"Origin": f"http://127.0.0.1:{port}"}) == 200
        assert status({"Host": f"evil.example:{port}"}) == 421  # DNS rebinding: a foreign name for this address
        assert status({"Host": f"evil.example:{port}"}, "/") == 421  # the UI's files too
        assert status({"Origin": "http://evil.example"}) == 403
        assert status({"Origin": f"http://127.0.0.1:{port + 1}"}) == 403  # another local server's page
        assert status({"Origin": "null"}) == 403  # a sandboxed frame or a file
        posted = http.post("/api/tools/status", json={}, headers={"Origin": "http://evil.example"})
        assert posted.status_code == 403 and "--cors-origin" in posted.json()["hint"]
        preflight = http.options("/api/tools/status", headers={"Origin": PAGE, "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers


def test_cors_only_for_the_origins_given(sample_db: Path, tmp_path: Path) -> None:
    db = copy_db(sample_db, tmp_path)
    server = serving(tmp_path, "--db", str(db), "--cors-origin", PAGE)
    with server as running, httpx.Client(base_url=running.base) as http:
        ask = {"Origin": PAGE, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": DB_HEADER}
        preflight = http.options("/api/tools/status", headers=ask)
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == PAGE
        called = http.post("/api/tools/status", json={}, headers={"Origin": PAGE})
        assert called.status_code == 200 and called.headers["access-control-allow-origin"] == PAGE
        foreign = http.post("/api/tools/status", json={}, headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers


async def test_a_token_guards_mcp_at_a_custom_path_too(sample_db: Path, tmp_path: Path) -> None:
    db = copy_db(sample_db, tmp_path)
    flags = ("--token", TOKEN, "--with-mcp", "--mcp-path", "/kb/mcp")
    with serving(tmp_path, "--db", str(db), *flags) as server:
        async with rest_client(server) as anonymous:
            refused = await anonymous.post("/kb/mcp", json=INITIALIZE, headers=MCP_ACCEPT)
            assert refused.status_code == 401, refused.text
            assert (await anonymous.get("/kb/other")).status_code == 401  # a path no one planned is guarded too
            assert (await anonymous.get("/api/health")).status_code == 200
            assert (await anonymous.get("/")).status_code == 200
            assert (await anonymous.get("/js/main.js")).status_code == 200
        async with rest_client(server, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            assert (await client.post("/kb/mcp", json=INITIALIZE, headers=MCP_ACCEPT)).status_code == 200
