"""The real `evigraph mcp` server in a subprocess, and the MCP SDK's own clients to talk to it.

A small corpus (examples/sample) is ingested once with the rule extractor; every server gets its
own copy of that database, because the embedded database has one writer and a second server on
the same file would forward to the first (tested on purpose in test_mcp_forwarding.py only).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from tests.conftest import free_port

from evigraph import KnowledgeBase

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"
QUESTION = "Who founded Harbor Lab?"
READ_TOOLS = {
    *("retrieve", "search_passages", "read_passages", "navigate_document", "status", "get_ontology"),
    *("search_entities", "explore_relationships", "search_themes", "cypher_query", "get_context"),
    *("source_status", "check_citations", "render_citations"),
}
DESTRUCTIVE_TOOLS = {"ingest", "set_ontology", "finalize", "delete_document", "upsert_entities", "upsert_relations"}
FILES_ROOT_TOOLS = {"preview_files", "ingest_code"}
"""Write tools offered only with a files root (ingest_code is destructive too: it removes deleted files' nodes)."""
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 120.0


def child_env(**extra: str) -> dict[str, str]:
    """This environment without any EVIGRAPH_* setting (a developer's own must not leak in), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    env.update(extra)
    return env


async def build_kb(db: Path, sources: Sequence[Path]) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        report = await kb.ingest(list(sources), progress=False)
        assert report.ok, report.failed


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/sample ingested with the rule extractor, once; copy it with `db_copy` before serving it."""
    db = tmp_path_factory.mktemp("mcp-sample") / "sample.db"
    asyncio.run(build_kb(db, [SAMPLE]))
    return db


def copy_db(template: Path, folder: Path, name: str = "kb.db") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copyfile(template, target)
    return target


@pytest.fixture
def db_copy(sample_db: Path, tmp_path: Path) -> Path:
    """A private copy of the sample knowledge base for one test."""
    return copy_db(sample_db, tmp_path / "db")


# -- servers over the network --------------------------------------------------------------------


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    transport: str
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.base + ("/mcp" if self.transport == "http" else "/sse")

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def wait_for_port(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = START_TIMEOUT_S) -> None:
    """Until the server accepts TCP connections; fails early with its log if it exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"server did not listen on {port} within {timeout} s:\n{log.read_text(errors='replace')}")


def start_http(
    db: Path,
    transport: str = "http",
    *args: str,
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
) -> HttpServer:
    port = free_port()
    network = ["--host", host, "--port", str(port)]
    log = db.with_name(f"{db.name}.{transport}-{port}.log")
    argv = ["mcp", "--db", str(db), "--transport", transport, *network, *args]
    return launch(argv, port, log, cwd=db.parent, host=host, transport=transport, env=env)


def launch(
    argv: Sequence[str],
    port: int,
    log: Path,
    *,
    cwd: Path,
    host: str = "127.0.0.1",
    transport: str = "http",
    env: dict[str, str] | None = None,
) -> HttpServer:
    """`python -m evigraph ARGV`, a server listening on `port`, once it accepts connections."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evigraph", *argv],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            env=child_env(**(env or {})),
            cwd=cwd,
        )
    server = HttpServer(proc, host, port, transport, log)
    try:
        wait_for_port(proc, port, log)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running(
    db: Path, transport: str = "http", *args: str, host: str = "127.0.0.1", env: dict[str, str] | None = None
) -> Iterator[HttpServer]:
    server = start_http(db, transport, *args, host=host, env=env)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def http_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """A loopback streamable-HTTP server (no token, writes allowed) on its own copy of the sample, shared."""
    with running(copy_db(sample_db, tmp_path_factory.mktemp("mcp-http")), "http", "--allow-writes") as server:
        yield server


@pytest.fixture(scope="session")
def sse_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """A loopback SSE server (no token, writes allowed) on its own copy of the sample, shared by the tests."""
    with running(copy_db(sample_db, tmp_path_factory.mktemp("mcp-sse")), "sse", "--allow-writes") as server:
        yield server


# -- clients ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_client(
    url: str,
    headers: dict[str, str] | None = None,
    *,
    keepalive: bool = True,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """The SDK client over streamable HTTP, with its own httpx2 connection pool."""
    limits = httpx2.Limits() if keepalive else httpx2.Limits(max_keepalive_connections=0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S, limits=limits) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=CALL_TIMEOUT_S) as c,
    ):
        yield c


@contextlib.asynccontextmanager
async def sse_mcp_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    async with Client(sse_client(url, headers=headers, timeout=30), read_timeout_seconds=CALL_TIMEOUT_S) as c:
        yield c


def stdio_params(db: Path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "evigraph", "mcp", "--db", str(db), *args],
        env=child_env(**(env or {})),
        cwd=str(db.parent),
    )


@contextlib.asynccontextmanager
async def stdio_mcp_client(
    db: Path, *args: str, env: dict[str, str] | None = None, errlog: IO[str] | None = None
) -> AsyncIterator[Client]:
    """The SDK client on a fresh `evigraph mcp` over stdio; the server's stderr goes to `errlog`."""
    own = errlog is None
    log = errlog or db.with_name(db.name + ".stdio.log").open("a", encoding="utf-8")
    try:
        async with Client(
            stdio_client(stdio_params(db, *args, env=env), errlog=log), read_timeout_seconds=CALL_TIMEOUT_S
        ) as c:
            yield c
    finally:
        if own:
            log.close()


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed; returns its structured content."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, f"{tool} failed: {text}"
    assert isinstance(result.structured_content, dict)
    assert text, f"{tool} returned no text content"
    return result.structured_content


async def error_text(client: Client, tool: str, args: dict[str, Any]) -> str:
    """A tool call that must fail as a tool result (not a protocol error); returns its message."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} {args} did not fail: {result.structured_content}"
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


def numbers(retrieved: dict[str, Any]) -> list[int]:
    """Every evidence number in a retrieve result, passages first."""
    return [
        item["n"]
        for section in ("passages", "entities", "relations", "facts")
        for item in retrieved.get(section, [])
        if item.get("n")
    ]


async def citations(client: Client, answer: str) -> dict[str, Any]:
    return await call(client, "check_citations", {"answer": answer})
