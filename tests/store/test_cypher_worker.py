"""Free-form Cypher in a worker process (`store/embedded/cypher_worker.py`), against a real file.

The guard refuses every query these send; the worker is what bounds a query nobody has found yet,
so these tests hand it queries directly (as `EmbeddedStore.query` does once the guard passed one):
a real engine crash, a query past its deadline the engine does not interrupt, and one past the
worker's memory cap. Each time the serving process survives, says what happened, and the next
query gets a fresh worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store.test_cypher_guard import store_db as store_db  # the fixture

from evigraph.errors import ConfigurationError, QueryAborted, QueryTimeout, ReadOnlyQueryError
from evigraph.models import DocumentVersion, GraphData, TextChunk
from evigraph.store.cypher.statement import Guarded
from evigraph.store.embedded.cypher_worker import MEMORY_ENV, CypherWorkers
from evigraph.store.embedded.engine import file_engine
from evigraph.store.embedded.store import EmbeddedStore

pytestmark = pytest.mark.slow

DOUBLED_LIST = "WITH [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] AS l " + " ".join(["WITH list_concat(l, l) AS l"] * 21)
"""2^21 x 10 items: the engine does not check its time limit inside these projections (a 10 s limit
ran 23 s), and its page cache does not bound them (6 GB beside a 512 MB cache)."""


@pytest.fixture(scope="module")
def db(store_db: Path) -> Path:
    """The guard tests' one-document knowledge base (Alice met Bob)."""
    return store_db


@pytest.fixture
def workers(db: Path) -> Iterator[CypherWorkers]:
    pool = CypherWorkers(db, str(file_engine(db)))
    yield pool
    pool.close()


def names(pool: CypherWorkers) -> list[str]:
    rows = pool.run(Guarded("MATCH (e:Entity) RETURN e.name AS name LIMIT 5", {}), 5, 10_000)
    return [r["name"] for r in rows]


def test_a_read_only_store_answers_cypher_from_a_worker_process(db: Path) -> None:
    async def go() -> None:
        async with EmbeddedStore(db, read_only=True) as store:
            rows = await store.cypher_query("MATCH (e:Entity) RETURN e.name AS name")
            assert [r["name"] for r in rows] == ["Alice"]
            assert store._cypher_workers is not None and store._cypher_workers._idle  # kept warm
            pid = store._cypher_workers._idle[0]._proc.pid
            await store.cypher_query("MATCH (c:Chunk) RETURN c.text AS t")
            assert store._cypher_workers._idle[0]._proc.pid == pid  # the same process answered again
        assert not store._cypher_workers  # closing the store ends its workers

    asyncio.run(go())


def test_an_engine_crash_ends_the_worker_only(workers: CypherWorkers) -> None:
    # 800 nested calls overflow the engine's parser stack (SIGSEGV): the guard refuses anything
    # near this, but a crash nobody knows of yet must end the same way.
    crash = Guarded("RETURN " + "lower(" * 800 + "'x'" + ")" * 800 + " AS x", {})
    with pytest.raises(ReadOnlyQueryError, match="SIGSEGV") as err:
        workers.run(crash, 5, 10_000)
    assert "server is unaffected" in err.value.hint
    assert names(workers) == ["Alice"]  # a new worker answers the next query


def test_a_query_past_its_deadline_is_killed(workers: CypherWorkers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "16000")  # so the deadline, not the memory cap, ends it
    with pytest.raises(QueryTimeout, match="ran past its 1 s limit and was stopped"):
        workers.run(Guarded(DOUBLED_LIST + " RETURN size(l) AS n", {}), 5, 1_000)
    assert names(workers) == ["Alice"]


def test_a_query_past_the_memory_cap_fails_and_the_next_one_runs(
    workers: CypherWorkers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MEMORY_ENV, "200")
    with pytest.raises(QueryAborted, match="more memory"):
        workers.run(Guarded(DOUBLED_LIST + " RETURN size(l) AS n", {}), 5, 60_000)
    assert not workers._idle  # the engine keeps what it took: that worker is not used again
    assert names(workers) == ["Alice"]


def test_a_worker_that_exited_while_idle_is_replaced(workers: CypherWorkers) -> None:
    assert names(workers) == ["Alice"]
    [idle] = workers._idle
    idle.kill()  # as if IDLE_S had passed
    assert names(workers) == ["Alice"]


def test_a_bad_memory_setting_is_refused_by_name(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "lots")
    with pytest.raises(ConfigurationError, match=MEMORY_ENV) as err:
        CypherWorkers(db, str(file_engine(db)))
    assert f"{MEMORY_ENV}=512" in err.value.hint


def test_a_writable_store_runs_cypher_in_its_own_process(db: Path) -> None:
    # The engine lets no other process open a file held for writing, so no worker is started.
    async def go() -> None:
        async with EmbeddedStore(db) as store:
            rows = await store.cypher_query("MATCH (e:Entity) RETURN e.name AS name")
            assert [r["name"] for r in rows] == ["Alice"]
            assert store._cypher_workers is None

    asyncio.run(go())


def test_a_writable_store_interrupts_a_query_that_grows_its_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows collected into one value grow by batches, which the engine interrupts between: a query
    the guard lets through (one collected list) is stopped once this process grew past the cap, and
    since the engine keeps what it took, free-form Cypher then stays refused in this process."""
    text = "a passage of about a hundred characters, repeated to give the cross product some weight. " * 2
    chunks = tuple(TextChunk(index=i, text=f"{i} {text}", start=0, end=len(text)) for i in range(300))
    doc = DocumentVersion(
        key="big", title="big", path="big", content_hash="h", loader="text", chunks=chunks, graph=GraphData()
    )
    heavy = "MATCH (a:Chunk), (b:Chunk), (c:Chunk) WITH collect(a.text + b.text + c.text) AS l RETURN size(l) AS n"
    monkeypatch.setenv(MEMORY_ENV, "150")

    async def go() -> None:
        async with EmbeddedStore(tmp_path / "kb.db") as store:
            await store.write_versions([doc])
            with pytest.raises(QueryAborted, match="more than the 150 MB"):
                await store.cypher_query(heavy, timeout_ms=60_000)
            assert (await store.counts()).chunks == 300  # the store goes on
            # The engine keeps what a stopped query took: the budget is the process's, not the query's.
            with pytest.raises(QueryAborted, match="until the server restarts") as spent:
                await store.cypher_query("MATCH (c:Chunk) RETURN count(c) AS n")
            assert "read-only" in spent.value.hint

    asyncio.run(go())
