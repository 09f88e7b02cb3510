"""Read replicas: with `?replicas=`, reads go to a real replica (`REPLICAOF`) and writes to the
primary; a replica that goes away is skipped, and used again once it is back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from tests.conftest import free_port

from evigraph import KnowledgeBase
from evigraph.store.falkordb import connection
from evigraph.store.falkordb.server import LocalServer


def client(server: LocalServer) -> redis.Redis:
    """A raw client of a local server, handed the password `start` generated for it."""
    return redis.Redis(port=server.port, password=server.password())


def reads_served(server: LocalServer) -> int:
    """How many read-only graph queries a server has answered."""
    stats = client(server).info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k.lower().endswith("graph.ro_query"))


def replicate(replica: LocalServer, primary: LocalServer, timeout: float = 30.0) -> None:
    """Make `replica` follow `primary`, which asks its replicas for its password too."""
    to = client(replica)
    to.config_set("masterauth", primary.password() or "")
    to.execute_command("REPLICAOF", "127.0.0.1", str(primary.port))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if to.info("replication").get("master_link_status") == "up":
            return
        time.sleep(0.2)
    raise AssertionError("the replica never linked to the primary")


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[LocalServer, LocalServer]]:
    primary = LocalServer(tmp_path / "primary", port=free_port(), host="127.0.0.1")
    replica = LocalServer(tmp_path / "replica", port=free_port(), host="127.0.0.1")
    primary.start(persist=False)
    replica.start(persist=False)
    try:
        replicate(replica, primary)
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


def test_reads_go_to_the_replica_and_writes_to_the_primary(
    pair: tuple[LocalServer, LocalServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, replica = pair
    monkeypatch.setattr(connection, "REPLICA_RETRY_S", 0.5)
    db = f"falkordb://127.0.0.1:{primary.port}/kb?replicas=127.0.0.1:{replica.port}"

    async def run() -> None:
        async with KnowledgeBase(db, extractor="rules") as kb:
            await kb.ingest(text="Ada Lovelace wrote the first program for the Analytical Engine.", key="ada")
        deadline = time.monotonic() + 20
        async with KnowledgeBase(db, read_only=True) as kb:
            while time.monotonic() < deadline:  # replication is asynchronous
                if [d.key for d in await kb.documents()] == ["ada"]:
                    break
                await asyncio.sleep(0.2)
            before = (reads_served(primary), reads_served(replica))
            hits = (await kb.search_passages("Analytical Engine", mode="lexical")).hits
            assert [h.document_key for h in hits] == ["ada"]
            after = (reads_served(primary), reads_served(replica))
            assert after[1] > before[1] and after[0] == before[0]  # the replica answered, the primary did not

            replica.stop()  # gone: the primary answers, no error
            hits = (await kb.search_passages("Analytical Engine", mode="lexical")).hits
            assert [h.document_key for h in hits] == ["ada"]
            replica.start(persist=False)
            replicate(replica, primary)
            await asyncio.sleep(0.6)  # past the retry delay: the replica is asked again
            before_back = reads_served(replica)
            await kb.search_passages("Analytical Engine", mode="lexical")
            assert reads_served(replica) > before_back

    asyncio.run(run())
