"""A new knowledge base killed while it is being created is never left poisoned (issue 9, point 4).

Before, a process killed in its first second left a file on which every later ingest failed with
`Table ... fts ... already exists` (9 of 30 trials). Now the schema is built aside and linked
into place, and a half-built file from an older version is rebuilt when it holds no rows.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import engine_connection

from evigraph import KnowledgeBase
from evigraph.errors import NotAKnowledgeBaseError
from evigraph.store.embedded.schema import DDL

CREATE_AND_INGEST = """
import asyncio, sys
from evigraph import KnowledgeBase
from evigraph.errors import NotAKnowledgeBaseError
print("ready", flush=True)
async def main():
    async with KnowledgeBase(sys.argv[1], extractor="rules") as kb:
        await kb.ingest(text="Alice Walker met Bob Marley in Paris.", key="first")
asyncio.run(main())
"""


async def assert_usable(db: Path) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text="Carol King wrote to David Bowie in Berlin.", key="after")
        assert (await kb.retrieve("Carol King Berlin")).passages
        assert (await kb.check()).ok
        assert (await kb.status()).documents in (1, 2)


def start(db: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CREATE_AND_INGEST, str(db)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    return proc


@pytest.mark.slow
async def test_killed_creation_leaves_nothing_or_a_usable_knowledge_base(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    assert start(tmp_path / "timing" / "kb.db").wait() == 0
    whole = time.perf_counter() - t0  # import, create, ingest: the kills spread over this
    rng = random.Random(9)
    outcomes = []
    for trial in range(6):
        db = tmp_path / f"t{trial}" / "kb.db"
        proc = start(db)
        time.sleep(rng.uniform(0.1, 1.0) * whole)
        building = any(p.name.endswith(".creating") for p in db.parent.glob(".*")) if db.parent.exists() else False
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcomes.append((building, db.exists(), proc.returncode))
        await assert_usable(db)
        assert not [p.name for p in db.parent.iterdir() if p.name.endswith(".creating")]
    assert any(code == -signal.SIGKILL for *_, code in outcomes), outcomes


async def test_a_stale_build_of_a_dead_process_is_removed(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".kb.db.{dead.stdout.strip()}.abcd1234.creating"
    stale.write_bytes(b"half a database")
    (tmp_path / (stale.name + ".wal")).write_bytes(b"log")
    mine = tmp_path / f".kb.db.{os.getpid()}.abcd1234.creating"  # a live process's build stays
    mine.write_bytes(b"in progress")
    await assert_usable(db)
    # kb.db.indexes: the derived indexes the knowledge base's close saved (`store/index_files.py`)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kb.db", "kb.db.indexes", mine.name])


def raw(db: Path, statements: tuple[str, ...], *, read_only: bool = False) -> list[Any]:
    """Run statements on the engine directly; the last one's rows."""
    conn = engine_connection(db, read_only=read_only)
    database = conn.database
    rows: list[Any] = []
    try:
        for statement in statements:
            result = conn.execute(statement)
            assert not isinstance(result, list)
            rows = [result.get_next() for _ in iter(result.has_next, False)]
            result.close()
    finally:
        conn.close()
        database.close()
    return rows


@pytest.mark.parametrize("tables", [len(DDL), 2, 0])
async def test_a_half_built_knowledge_base_is_rebuilt_at_open(tmp_path: Path, tables: int) -> None:
    """What an older evigraph left when killed before the schema mark: tables, no mark, no rows."""
    db = tmp_path / "kb.db"
    raw(db, DDL[:tables])
    async with KnowledgeBase(db, read_only=True) as kb:
        with pytest.raises(NotAKnowledgeBaseError, match="holds no evigraph knowledge base yet"):
            await kb.status()
    await assert_usable(db)


async def test_a_half_built_file_with_rows_is_finished_in_place_not_discarded(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    raw(db, (*DDL, "CREATE (:SourceLog {key: 'kept', state: 'current'})"))
    await assert_usable(db)
    assert raw(db, ("MATCH (s:SourceLog {key: 'kept'}) RETURN count(s)",), read_only=True) == [[1]]
