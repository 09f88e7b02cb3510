"""Compacting a real knowledge base: the file shrinks, every row and answer stays, failures keep the old file."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import engine_connection
from tests.tools.conftest import HashEmbedder

from evigraph import KnowledgeBase
from evigraph.errors import ConfigurationError, DatabaseLockedError, StoreError
from evigraph.models import ExtractedEntity
from evigraph.store.embedded.compaction import COMPACT_SUFFIX
from evigraph.store.embedded.schema import VERSION_SEQ
from evigraph.store.embedded.store import EmbeddedStore

QUESTIONS = ("Who leads ReefWatch?", "Which platform did Harbor Lab build?", "Marta Oliveira 2014")
_ENGINE_IDS = frozenset({"_id", "_src", "_dst"})
"""Internal ids, which name a row by its place in the file: compaction moves rows, not what they hold
(Kuzu spells them in lower case, LadybugDB in capitals)."""


def snapshot(db: Path) -> dict[str, list[str]]:
    """Every row of every table, each as the sorted text of its properties (endpoints' for a relationship)."""
    conn = engine_connection(db, read_only=True)

    def shown(value: dict[str, Any]) -> str:
        return repr(sorted((k, v) for k, v in value.items() if k.lower() not in _ENGINE_IDS))

    out: dict[str, list[str]] = {}
    for name, kind in conn.execute("CALL SHOW_TABLES() RETURN name, type").get_all():
        if kind == "NODE":
            rows = [shown(n) for (n,) in conn.execute(f"MATCH (n:`{name}`) RETURN n").get_all()]
        else:
            found = conn.execute(f"MATCH (a)-[r:`{name}`]->(b) RETURN a, r, b").get_all()
            rows = [shown(a) + shown(r) + shown(b) for a, r, b in found]
        out[name] = sorted(rows)
    return out


async def answers(db: Path) -> list[dict[str, Any]]:
    async with KnowledgeBase(db, read_only=True, embedder=HashEmbedder()) as kb:
        return [(await kb.retrieve(q)).model_dump(mode="json") for q in QUESTIONS]


@pytest.fixture
async def deleted_from(corpus: Path, tmp_path: Path) -> Path:
    """A knowledge base with vectors, themes, agent knowledge, traces and settings; one document deleted."""
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        assert (await kb.ingest([corpus])).ok
        await kb.ingest(text="Ana Costa moved the ReefWatch cameras to Peniche in 2021.", key="note:move")
        await kb.upsert_entities([ExtractedEntity.create("Peniche Harbour", "Location")])
        traces = kb.traces("harbor", "analyst")  # trace rows: nulls, a flag, a saved request
        await traces.create_task("funding", "Find who funds ReefWatch", request_id="r1")
        await traces.set_step("funding", "read", "completed", result="Two grants.")
        await kb.finalize()
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        assert await kb.delete_document(await kb.file_key(corpus / "lisbon.txt"))
    return db


async def test_compact_gives_back_space_and_keeps_every_row_and_answer(deleted_from: Path, corpus: Path) -> None:
    db = deleted_from
    rows, found = snapshot(db), await answers(db)
    assert rows["Document"] and rows["Chunk"] and rows["Entity"] and rows["RELATES"] and rows["MENTIONED_IN"]
    assert any("lisbon.txt" in row for row in rows[VERSION_SEQ])  # the deleted document's version number
    conn = engine_connection(db, read_only=True)
    embedded = conn.execute("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN count(c)").get_all()
    assert embedded == [[len(rows["Chunk"])]]  # every passage has its vector
    del conn
    async with KnowledgeBase(db) as kb:
        report = await kb.compact()
        assert (await kb.status()).documents == 3  # open on the compacted file
    assert report.replaced and report.bytes_after < report.bytes_before
    assert report.bytes_after <= os.path.getsize(db) + 4096 and report.rows > 0
    assert snapshot(db) == rows
    assert await answers(db) == found
    assert not list(db.parent.glob(f"*{COMPACT_SUFFIX}"))
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:  # and it takes writes
        assert (await kb.ingest(text="Tomas Reyes joined ReefWatch.", key="note:join")).ok
        assert (await kb.status()).documents == 4
        # numbered past the version deleted before the compaction, as without one
        assert [d.version for d in (await kb.ingest([corpus / "lisbon.txt"])).documents] == [2]


async def test_a_failure_midway_leaves_the_knowledge_base_as_it_was(deleted_from: Path) -> None:
    db = deleted_from
    rows, inode = snapshot(db), db.stat().st_ino
    seen: list[tuple[str, int, int]] = []

    def fail_after_the_first_rows(stage: str, done: int, total: int) -> None:
        seen.append((stage, done, total))
        if done > 0:
            raise OSError(28, "No space left on device")  # what a full disk raises in the copy

    async with KnowledgeBase(db) as kb:
        with pytest.raises(OSError, match="No space left"):
            await kb.compact(progress=fail_after_the_first_rows)
        assert (await kb.status()).documents == 3  # the session goes on, on the old file
    assert seen[0][:2] == ("copy", 0) and seen[-1][1] > 0
    assert db.stat().st_ino == inode and snapshot(db) == rows
    assert not list(db.parent.glob(f".{db.name}.*"))  # no half-built file left behind


async def test_a_cancelled_compaction_stops_and_keeps_the_old_file(deleted_from: Path) -> None:
    """What Ctrl-C does to `evigraph compact`: asyncio cancels the task, the copy stops at its next step."""
    db = deleted_from
    rows, inode = snapshot(db), db.stat().st_ino
    loop = asyncio.get_running_loop()
    cancelled = threading.Event()

    async with KnowledgeBase(db) as kb:

        def cancel_once(stage: str, done: int, total: int) -> None:
            if not cancelled.is_set():
                cancelled.set()
                loop.call_soon_threadsafe(task.cancel)
                time.sleep(0.5)  # the cancellation reaches the task before the next step

        task = asyncio.ensure_future(kb.compact(progress=cancel_once))
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await kb.status()).documents == 3  # the store is open, on the old file
    assert db.stat().st_ino == inode and snapshot(db) == rows
    assert not list(db.parent.glob(f".{db.name}.*"))


class RacedStore(EmbeddedStore):
    """A store whose file another process opens in the instant compaction lets go of it."""

    holder: subprocess.Popen[str] | None = None

    def _release(self) -> None:
        super()._release()
        if self.holder is None and self.path.exists():
            self.holder = hold(self.path)


def hold(db: Path, *, read_only: bool = False) -> subprocess.Popen[str]:
    """Another process with the knowledge base open, as a running server or ingest has it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(read_only)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


HOLDER = """
import asyncio, sys, time
from evigraph.store.embedded.store import EmbeddedStore

async def main():
    store = EmbeddedStore(sys.argv[1], read_only=sys.argv[2] == "True")
    await store.open()
    print("ready", flush=True)
    time.sleep(60)

asyncio.run(main())
"""


async def test_a_process_opening_the_file_during_the_swap_keeps_the_old_file(deleted_from: Path) -> None:
    db = deleted_from
    rows, inode = snapshot(db), db.stat().st_ino
    store = RacedStore(db)
    await store.open()
    try:
        with pytest.raises(DatabaseLockedError, match="while it was being compacted"):
            await store.compact()
    finally:
        if store.holder is not None:
            store.holder.kill()
            store.holder.wait()
        await store.close()
    assert store.holder is not None and db.stat().st_ino == inode and snapshot(db) == rows
    assert not list(db.parent.glob(f".{db.name}.*"))


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "reader"])
async def test_compact_refuses_while_another_process_has_the_file(deleted_from: Path, read_only: bool) -> None:
    db = deleted_from
    holder = hold(db, read_only=read_only)
    try:
        with pytest.raises(DatabaseLockedError) as refused:
            async with KnowledgeBase(db) as kb:
                await kb.compact()
        assert "another process is using it" in str(refused.value) and "evigraph mcp" in refused.value.hint
    finally:
        holder.kill()
        holder.wait()
    assert not list(db.parent.glob(f".{db.name}.*"))


async def test_a_read_only_store_is_never_compacted(deleted_from: Path) -> None:
    db = deleted_from
    size = db.stat().st_size
    async with EmbeddedStore(db, read_only=True) as store:
        with pytest.raises(StoreError, match="open read-only"):
            await store.compact()
    async with KnowledgeBase(db, read_only=True) as kb:
        with pytest.raises(ConfigurationError, match="read-only"):
            await kb.compact()
    assert db.stat().st_size == size


async def test_a_compact_file_is_left_alone(deleted_from: Path) -> None:
    db = deleted_from
    async with KnowledgeBase(db) as kb:
        assert (await kb.compact()).replaced
        inode = db.stat().st_ino
        again = await kb.compact()
    assert not again.replaced and again.bytes_after == again.bytes_before and db.stat().st_ino == inode


async def test_a_process_opening_the_compacted_file_first_leaves_the_compaction_done(
    deleted_from: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap is the point of no return: the report says replaced, and why the store is closed;
    the knowledge base opens the file again on its next call once the other process is gone."""
    from evigraph.store.embedded import compaction

    db = deleted_from
    rows, inode = snapshot(db), db.stat().st_ino
    holders: list[subprocess.Popen[str]] = []

    def open_once_replaced(stage: str, path: Path) -> None:
        if stage == "replaced" and not holders:
            holders.append(hold(path))

    monkeypatch.setattr(compaction, "swap_hook", open_once_replaced)
    async with KnowledgeBase(db) as kb:
        try:
            report = await kb.compact()
        finally:
            for holder in holders:
                holder.kill()
                holder.wait()
        assert report.replaced and report.bytes_after < report.bytes_before
        assert "another process is using" in report.reopen_error
        assert (await kb.status()).documents == 3  # opened again, on the compacted file
    assert holders and db.stat().st_ino != inode and snapshot(db) == rows


async def test_the_sizes_reported_are_those_of_the_file_on_disk_after_writes_in_the_same_session(
    corpus: Path, tmp_path: Path
) -> None:
    """Writes of this session sit in the write-ahead log until a checkpoint, and the file grows when
    they are folded in: the sizes said are the file's after that, not a few MB before it."""
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        assert (await kb.ingest([corpus])).ok
        report = await kb.compact()
    assert abs(report.bytes_after - os.path.getsize(db)) <= 4096, report  # what it said is what is on disk
    assert report.bytes_after <= report.bytes_before
