"""The real `evigraph serve` in a subprocess, and an HTTP client to call it as a script would.

The MCP tests' sample knowledge base, process launcher and result helpers are reused
(tests/mcp/conftest.py): every server gets its own copy of the sample, as one embedded database
has one writer and a second server on the same file would forward to the first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, chat_reply
from tests.mcp.conftest import CALL_TIMEOUT_S, SAMPLE, HttpServer, copy_db, free_port, launch
from tests.mcp.conftest import sample_db as sample_db  # the session fixture, shared with the MCP tests

from evigraph import KnowledgeBase

TOKEN = "rest-token-for-tests"
SESSION = "x-evigraph-session"


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
"""An MCP handshake's first request: answered 200 by a server that lets the caller in."""
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


def kb_folder(sample_db: Path, where: Path, note: str) -> Path:
    """`where` holding alpha.db (the sample) and beta.db (the sample and `note`, key 'quarry'): the
    folder the --db-dir tests of REST and MCP serve."""
    copy_db(sample_db, where, "alpha.db")
    asyncio.run(add_note(copy_db(sample_db, where, "beta.db"), note))
    return where


async def add_note(db: Path, note: str) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text=note, key="quarry", progress=False)


def serving(cwd: Path, *args: str, host: str = "127.0.0.1", env: dict[str, str] | None = None) -> HttpServer:
    """`evigraph serve ARGS` on a free port, run from `cwd` (where its log goes); stopped when its `with` ends."""
    port = free_port()
    argv = ["serve", "--host", host, "--port", str(port), *args]
    return launch(argv, port, cwd / f"serve-{port}.log", cwd=cwd, host=host, env=env)


@pytest.fixture(scope="session")
def api_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """A loopback `evigraph serve --allow-writes` (no token) on its own copy of the sample, shared."""
    db = copy_db(sample_db, tmp_path_factory.mktemp("api"))
    with serving(db.parent, "--db", str(db), "--allow-writes") as server:
        yield server


@contextlib.asynccontextmanager
async def rest_client(
    server: HttpServer, session: str | None = None, headers: dict[str, str] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client on `server`; `session` names its evidence session (X-Evigraph-Session)."""
    sent = {**({SESSION: session} if session else {}), **(headers or {})}
    async with httpx.AsyncClient(base_url=server.base, headers=sent, timeout=CALL_TIMEOUT_S) as client:
        yield client


async def call_tool(client: httpx.AsyncClient, name: str, args: dict[str, Any] | None = None, **params: str) -> Any:
    """POST /api/tools/NAME that must succeed; returns its JSON result."""
    response = await client.post(f"/api/tools/{name}", json=args or {}, params=params)
    assert response.status_code == 200, f"{name}: {response.status_code} {response.text}"
    return response.json()


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    """The API's error body of a response that must have `status`."""
    assert response.status_code == status, f"{response.status_code} (wanted {status}): {response.text}"
    body: dict[str, Any] = response.json()
    assert body["error"], body
    return body


@pytest.fixture(scope="session")
def full_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """Every tool of the registry offered: writes, a files root, a project and an agent,
    reject_decision, and an LLM (the replay server the LLM tests use, answering every question)."""
    db = copy_db(sample_db, tmp_path_factory.mktemp("api-full"))
    with ReplayServer(answer=lambda request: chat_reply("Harbor Lab is in Lisbon [1].")) as llm:
        env = {"EVIGRAPH_LLM_BASE_URL": llm.url, "EVIGRAPH_LLM_MODEL": "test-model", "EVIGRAPH_LLM_API_KEY": KEY}
        env["EVIGRAPH_MCP_ALLOW_REJECT"] = "yes"
        options = ["--files-root", str(SAMPLE), "--project", "rest", "--agent", "tester"]
        with serving(db.parent, "--db", str(db), *options, env=env) as server:
            yield server
