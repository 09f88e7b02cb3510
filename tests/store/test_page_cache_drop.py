"""A large save reopens the engine first, so the pages an ingest left in its pool are not held
under the save's own (`EmbeddedStore._drop_page_cache`, `Executor.reopen`).

The store must come out of it whole: writable, answering as before, its saved indexes the ones a
fresh build makes; a reopen while a read runs is skipped, and one that cannot open the file again
says so on every later call instead of failing somewhere inside the engine.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.store.contract.conftest import version
from tests.store.test_saved_indexes import built, read
from tests.tools.conftest import HashEmbedder, write_corpus

from evigraph import KnowledgeBase
from evigraph.errors import StoreError
from evigraph.models import DocumentVersion
from evigraph.store.embedded import index_ops
from evigraph.store.embedded.engine import open_database
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.store import EmbeddedStore


def _doc(key: str) -> DocumentVersion:
    return version(key, [f"The {key} survey of the harbor."], [[]])


def _engine(store: EmbeddedStore) -> object:
    return store.executor._db


async def test_a_save_over_the_size_reopens_the_engine_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "kb.db"
    corpus = write_corpus(tmp_path / "corpus")
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        await kb.ingest([corpus])
        store = kb._store
        assert isinstance(store, EmbeddedStore)
        before = _engine(store)
        monkeypatch.setattr(index_ops, "DROP_PAGE_CACHE_MB", 1 << 20)  # a file under the size
        await kb.save_indexes()
        assert _engine(store) is before
        await kb.ingest(text="Zephyrine Quillborough Corp opened a depot in Bergen.", key="zephyrine")
        answer = await kb.retrieve("Acme Robotics", top_k=3)
        monkeypatch.setattr(index_ops, "DROP_PAGE_CACHE_MB", 0)
        await kb.save_indexes()
        assert _engine(store) is not before  # reopened
        assert (await kb.retrieve("Acme Robotics", top_k=3)).passages == answer.passages
        await kb.ingest(text="Osvald Quillborough runs the Zephyrine depot in Vardø.", key="osvald")  # still writable
        found = await kb.retrieve("Osvald Quillborough", top_k=3)
        assert "Osvald" in found.passages[0].text
    # What was saved after the reopen answers as a build from the file does. Not the passage
    # vectors: the engine's checkpoint garbles the hash embedder's vectors appended after one
    # (`test_engine_float_lists`), so the file no longer holds what the saved index read.
    assert await read(db, vectors=False) == await built(db, vectors=False)


async def test_a_reopen_waits_for_no_read_and_serves_the_next(tmp_path: Path) -> None:
    async with EmbeddedStore(tmp_path / "kb.db", read_connections=2) as store:
        await store.write_versions([_doc("d0")])
        reading, release = threading.Event(), threading.Event()

        def long_read(tx: Tx) -> int:
            rows = tx.rows("MATCH (d:Document) RETURN count(d) AS n")
            reading.set()
            release.wait(10)
            return int(rows[0]["n"])

        def reopen() -> bool:
            return store.executor.reopen(
                lambda: open_database(
                    store.executor._module, store.path, read_only=False, buffer_pool_mb=store.buffer_pool_mb
                )
            )

        running = asyncio.create_task(store.executor.read(long_read))
        await asyncio.to_thread(reading.wait, 10)
        engine = _engine(store)
        assert await asyncio.to_thread(reopen) is False  # a read holds one of its connections
        assert _engine(store) is engine
        release.set()
        assert await running == 1
        assert await asyncio.to_thread(reopen) is True
        assert _engine(store) is not engine
        found = await asyncio.gather(*(store.get_documents(["d0"]) for _ in range(6)))  # more reads than connections
        assert all(list(f) == ["d0"] for f in found)
        await store.write_versions([_doc("d1")])
        assert set(await store.get_documents(["d0", "d1"])) == {"d0", "d1"}


HOLD = """
import sys, time
import {engine} as engine
db = engine.Database(sys.argv[1])
print("open", flush=True)
sys.stdin.read()
"""


async def test_a_reopen_that_cannot_open_the_file_again_says_so_on_every_call(tmp_path: Path) -> None:
    """Another process opened the file in the moment it was free: the store refuses with that
    reason, and what it wrote is in the file for the next open."""
    path = tmp_path / "kb.db"
    store = EmbeddedStore(path)
    await store.open()
    holder: subprocess.Popen[str] | None = None
    try:
        await store.write_versions([_doc("d0")])
        module = store.executor._module

        def taken_meanwhile() -> object:
            nonlocal holder
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLD.format(engine=module.__name__), str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
            return open_database(module, path, read_only=False, buffer_pool_mb=store.buffer_pool_mb)

        with pytest.raises(StoreError, match="could not be opened again") as raised:
            await asyncio.to_thread(store.executor.reopen, taken_meanwhile)
        assert "open it again once no other process has it open" in (raised.value.hint or "")
        for call in (store.get_documents(["d0"]), store.write_versions([_doc("d1")])):
            with pytest.raises(StoreError, match="could not be opened again"):
                await call
    finally:
        await store.close()  # the engine is gone already: nothing to close twice
        if holder is not None:
            holder.communicate("")
    async with EmbeddedStore(path, read_only=True) as again:
        assert list(await again.get_documents(["d0", "d1"])) == ["d0"]
