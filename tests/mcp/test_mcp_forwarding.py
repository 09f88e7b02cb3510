"""One database, several stdio servers (IDE windows): the first serves it, later ones forward to it."""

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
from tests.mcp.conftest import (
    DESTRUCTIVE_TOOLS,
    FILES_ROOT_TOOLS,
    QUESTION,
    READ_TOOLS,
    SAMPLE,
    call,
    stdio_mcp_client,
)

from evigraph import KnowledgeBase, Limits, Toolkit
from evigraph.errors import ConfigurationError
from evigraph.serving.backend import LocalBackend
from evigraph.serving.forwarding import (
    ForwardingListener,
    RemoteBackend,
    forward_options,
    pointer_path,
    remove_dead_sockets,
    socket_path,
)

pytestmark = pytest.mark.slow
ZORBLAX = "Zorblax Institute is an observatory in Tromsø. Dr. Quentin Mirewood founded Zorblax Institute in 1999."
QUILLON = "Quillon Station is a weather post on Svalbard. Dr. Ada Brightwater runs Quillon Station since 2011."


def passage_texts(found: dict[str, Any]) -> list[str]:
    return [p["text"] for p in found["passages"]]


async def ingested(client: Client, text: str, document_key: str) -> None:
    result = await call(client, "ingest", {"text": text, "document_key": document_key})
    assert [(d["document_key"], d["status"]) for d in result["documents"]] == [(document_key, "ingested")]


async def finds(client: Client, question: str, text: str) -> None:
    found = await call(client, "retrieve", {"question": question})
    assert any(text in t for t in passage_texts(found)), passage_texts(found)


async def test_two_stdio_servers_on_one_database(db_copy: Path, tmp_path: Path) -> None:
    logs = {name: (tmp_path / f"{name}.log").open("w", encoding="utf-8") for name in ("a", "b", "c")}
    first: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
    stop_first = asyncio.Event()

    async def hold_first() -> None:
        """The first server lives in its own task, so it can end while the second one runs on."""
        async with stdio_mcp_client(db_copy, "--allow-writes", errlog=logs["a"]) as client:
            first.set_result(client)
            await stop_first.wait()

    holder = asyncio.create_task(hold_first())
    try:
        a = await asyncio.wait_for(asyncio.shield(first), timeout=60)
        first_pid = json.loads(pointer_path(db_copy).read_text())["pid"]
        async with stdio_mcp_client(db_copy, "--allow-writes", errlog=logs["b"]) as b:
            # Both answer, the second through the first.
            await finds(a, QUESTION, "Marta Oliveira")
            await finds(b, QUESTION, "Marta Oliveira")

            # A write through either is visible through the other.
            await ingested(b, ZORBLAX, "notes/zorblax")
            await finds(a, "Who founded Zorblax Institute?", "Quentin Mirewood")
            status = await call(a, "source_status", {"document_key": "notes/zorblax"})
            assert status["state"] == "current", status
            await ingested(a, QUILLON, "notes/quillon")
            await finds(b, "Who runs Quillon Station?", "Ada Brightwater")

            # The first server goes away (its window closes): the second takes the database over.
            stop_first.set()
            await asyncio.wait_for(holder, timeout=60)
            await finds(b, "Who founded Zorblax Institute?", "Quentin Mirewood")
            await finds(b, "Who runs Quillon Station?", "Ada Brightwater")
            new_pid = json.loads(pointer_path(db_copy).read_text())["pid"]
            assert new_pid != first_pid

            # A third window now forwards to the second.
            async with stdio_mcp_client(db_copy, "--allow-writes", errlog=logs["c"]) as c:
                await finds(c, "Who runs Quillon Station?", "Ada Brightwater")
    finally:
        stop_first.set()
        if not holder.done():
            await asyncio.wait_for(holder, timeout=60)
        for log in logs.values():
            log.close()
    # The take-over logged a warning to stderr (stdout kept carrying only the protocol: b kept working).
    assert "taking over the database" in (tmp_path / "b.log").read_text()
    assert not pointer_path(db_copy).exists()  # the last server removed its pointer on exit


async def test_a_forwarder_gets_no_more_than_its_own_options(db_copy: Path) -> None:
    """A read-only window forwarding to a read-write one serves the read tools only; another scope, files
    root or operator limits are refused. In process: the listener and forwarders of two `evigraph mcp`
    processes, one socket."""
    kb = KnowledgeBase(db_copy)
    await kb.open(for_write=True)
    listener = ForwardingListener(db_copy, LocalBackend(Toolkit(kb, files_root=SAMPLE)))
    await listener.start()
    forwarders: list[RemoteBackend] = []

    async def no_take_over() -> LocalBackend:
        raise AssertionError("the serving process is still there")

    async def forwarder(options: dict[str, Any] | None) -> RemoteBackend:
        remote = await RemoteBackend.connect(db_copy, no_take_over, options)
        forwarders.append(remote)
        return remote

    try:
        read_only = await forwarder(forward_options(True, SAMPLE, ()))
        assert {s.name for s in read_only.specs()} == READ_TOOLS
        refused = await read_only.call("", "ingest", {"text": "Written by a read-only window.", "document_key": "x"})
        assert refused.error and "read-only" in refused.text
        assert not (await read_only.call("", "retrieve", {"question": QUESTION})).error
        status = await read_only.call("", "source_status", {"document_key": "x"})
        assert status.data is not None and status.data["state"] != "current"  # nothing was written

        same = await forwarder(forward_options(False, SAMPLE, ()))
        assert {s.name for s in same.specs()} == READ_TOOLS | DESTRUCTIVE_TOOLS | FILES_ROOT_TOOLS
        with pytest.raises(ConfigurationError, match="document scope"):
            await forwarder(forward_options(False, SAMPLE, ["notes/*"]))
        with pytest.raises(ConfigurationError, match="files root"):
            await forwarder(forward_options(False, None, ()))
        assert len((await forwarder(None)).specs()) == len(same.specs())  # options unknown: as before
        with pytest.raises(ConfigurationError, match="project"):  # it would not get its project's task tools
            await forwarder(forward_options(True, None, (), "p", "a"))
        with pytest.raises(ConfigurationError, match="other limits: max_hits 50 there, 5 here"):
            await forwarder(forward_options(True, None, (), limits=Limits(max_hits=5)))  # bounds it would not get
    finally:
        for remote in forwarders:
            await remote.close()
        await listener.close()
        await kb.close()


def _dead_pid() -> int:
    """The number of a process that has ended (a finished child's, reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_a_server_clears_the_sockets_dead_servers_left(db_copy: Path, tmp_path: Path) -> None:
    """A server killed outright leaves its socket; the next one on that database removes it, and
    leaves a live process's socket and other databases' alone."""
    dead = socket_path(db_copy, _dead_pid())
    live = socket_path(db_copy, os.getppid())
    elsewhere = socket_path(tmp_path / "other.db", _dead_pid())
    for path in (dead, live, elsewhere):
        path.touch()
    kb = KnowledgeBase(db_copy)
    await kb.open(for_write=True)
    listener = ForwardingListener(db_copy, LocalBackend(Toolkit(kb)))
    try:
        await listener.start()
        assert not dead.exists() and live.exists() and elsewhere.exists()
        assert listener.socket.exists()  # its own, just made
        assert remove_dead_sockets(db_copy) == []  # nothing more to clear
    finally:
        await listener.close()
        await kb.close()
        for path in (live, elsewhere):
            path.unlink(missing_ok=True)
