"""Prepared statements cached per connection, and connections renewed: the engine's memory leak.

Kuzu 0.11.3 keeps memory for every statement a connection prepares until the connection
closes; the executor prepares each text once per connection and renews worn connections
(measurements in store/embedded/executor.py, proof over MCP in bench/soak.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from evigraph.errors import EngineError
from evigraph.models import DocumentVersion, GraphData, TextChunk
from evigraph.store.embedded import executor
from evigraph.store.embedded.engine import file_engine
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.store import EmbeddedStore

WORDS = ["harbor", "reef", "tide", "lagoon", "coral", "kelp", "dune", "estuary", "shoal", "current"]


def doc(key: str, text: str) -> DocumentVersion:
    return DocumentVersion(
        key=key,
        title=key,
        path=None,
        content_hash=key,
        loader="text",
        chunks=(TextChunk(index=0, text=text, start=0, end=len(text)),),
        graph=GraphData(),
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    async with EmbeddedStore(tmp_path / "kb.db", read_connections=1) as s:
        await s.write_versions([doc(f"d{i}", f"The {w} survey of {WORDS[i - 1]} waters.") for i, w in enumerate(WORDS)])
        yield s


def rows(store: EmbeddedStore, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    return store.executor.read_sync(lambda tx: tx.rows(query, params))


def connection(store: EmbeddedStore) -> Any:
    def raw(tx: Tx) -> Any:
        return tx._conn

    return store.executor.read_sync(raw)


async def test_a_left_out_parameter_reads_null_not_the_previous_callers_value(store: EmbeddedStore) -> None:
    # One read connection: both calls run the same cached statement.
    assert rows(store, "RETURN $a AS a, $b AS b", {"a": 1, "b": "secret"}) == [{"a": 1, "b": "secret"}]
    assert rows(store, "RETURN $a AS a, $b AS b", {"a": 2}) == [{"a": 2, "b": None}]


async def test_a_failed_statement_raises_the_engines_message_and_is_not_kept(store: EmbeddedStore) -> None:
    for _ in range(2):
        with pytest.raises(EngineError, match="Table Nope does not exist"):
            rows(store, "MATCH (x:Nope) RETURN x", {"a": 1})
    if file_engine(store.path) == "kuzu":  # LadybugDB ignores a parameter the statement does not name
        with pytest.raises(EngineError, match="Parameter zz not found"):
            rows(store, "RETURN $a AS a", {"a": 1, "zz": 2})
    else:
        assert rows(store, "RETURN $a AS a", {"a": 1, "zz": 2}) == [{"a": 1}]
    assert rows(store, "RETURN $a AS a", {"a": 3}) == [{"a": 3}]


async def test_a_worn_connection_is_replaced_with_its_extensions_loaded(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "RENEW_AFTER_PREPARES", 5)
    first = connection(store)
    for i in range(5):  # five distinct texts: five prepares
        assert rows(store, f"RETURN $x + {i} AS v", {"x": 1}) == [{"v": 1 + i}]
    second = connection(store)
    assert second is not first
    assert first.is_closed  # closing it is what frees the engine's memory
    hits = await store.search_passages("lagoon", limit=3)  # the full-text extension works on the new one
    assert hits and "lagoon" in hits[0].text
    assert rows(store, "RETURN $x + 0 AS v", {"x": 41}) == [{"v": 41}]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
async def test_repeated_full_text_searches_do_not_grow_memory(store: EmbeddedStore) -> None:
    queries = [f"{a} {b}" for a in WORDS for b in WORDS]
    for q in queries:  # warm-up: pages, plans and allocator pools
        await store.search_passages(q, limit=5)
    before = rss_mb()
    for _ in range(15):  # 1,500 searches: about 73 MB when every call prepares anew
        for q in queries:
            await store.search_passages(q, limit=5)
    assert rss_mb() - before < 20
