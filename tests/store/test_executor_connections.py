"""New engine connections open safely beside a write transaction and beside each other.

A connection loads its extensions when it opens, which Kuzu runs as a write transaction; two at
once, or one during a write, failed with "Only one write transaction at a time". An ingest that
serves reads to other processes (`evigraph status` during `evigraph ingest`) met both.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from tests.conftest import engine_module
from tests.store.contract.conftest import version

from evigraph.models import DocumentVersion
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.embedded.store import EmbeddedStore


def _doc(key: str) -> DocumentVersion:
    return version(key, [f"The {key} survey of the harbor."], [[]])


async def test_reads_open_connections_during_a_write_and_at_once(tmp_path: Path) -> None:
    async with EmbeddedStore(tmp_path / "kb.db", read_connections=4) as store:
        writing, release = threading.Event(), threading.Event()

        def slow_write(tx: Tx) -> None:
            tx.execute("MATCH (d:Document) RETURN count(d)").close()
            writing.set()
            release.wait(10)

        write = asyncio.create_task(store.executor.write(slow_write))
        await asyncio.to_thread(writing.wait, 10)
        # A fresh pool: each of these parallel reads opens a connection while the write is open.
        reads = asyncio.gather(*(store.get_documents([f"d{i}"]) for i in range(4)))
        await asyncio.sleep(0.3)
        release.set()
        await write
        assert await reads == [{}, {}, {}, {}]
        await store.write_versions([_doc("d0")])
        for _ in range(5):  # and many at once, with nothing written meanwhile
            found = await asyncio.gather(*(store.get_documents(["d0"]) for _ in range(8)))
            assert all(list(f) == ["d0"] for f in found)


def test_a_commit_that_checkpoints_waits_for_a_long_read(tmp_path: Path) -> None:
    """The engine's checkpoint fails a COMMIT after about 5 s of waiting for an open read
    transaction; the executor makes the COMMIT wait for the read instead, and nothing is lost."""
    engine = engine_module()
    db = engine.Database(str(tmp_path / "ck.db"), checkpoint_threshold=1)  # every commit checkpoints
    executor = Executor(db, engine, read_only=False, pool_size=2)
    try:
        executor.raw(lambda tx: tx.execute("CREATE NODE TABLE T(id INT64 PRIMARY KEY)").close())
        reading, order = threading.Event(), []

        def long_read(tx: Tx) -> None:
            tx.execute("MATCH (t:T) RETURN count(t)").close()
            reading.set()
            time.sleep(7)  # longer than the engine waits
            order.append("read")

        reader = threading.Thread(target=executor.read_sync, args=(long_read,))
        reader.start()
        assert reading.wait(10)
        executor.write_sync(lambda tx: tx.execute("CREATE (:T {id: 1})").close())
        order.append("write")
        reader.join()
        assert order == ["read", "write"]
        assert executor.read_sync(lambda tx: tx.column("MATCH (t:T) RETURN count(t)")) == [1]
    finally:
        executor.close()
