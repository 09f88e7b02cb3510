"""A reader and a writer never share a database file across processes, on either engine.

LadybugDB drops a read-only open's lock once its log is replayed, so without `reader_lock` an
ingest in one process wrote and checkpointed under a read-only server in another. Each case here
runs the holder in a real second process through the store itself, as a server or ingest holds it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.store.contract.conftest import version
from tests.store.test_compaction import hold

from evigraph.errors import DatabaseLockedError
from evigraph.store.embedded.store import EmbeddedStore

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="open file description locks are Linux's")


@pytest.fixture
async def db(tmp_path: Path) -> Path:
    path = tmp_path / "kb.db"
    async with EmbeddedStore(path) as store:
        await store.write_versions([version("a", ["Ada Lovelace wrote the first program."], [[("Ada", "Person")]])])
    return path


@contextmanager
def held(db: Path, *, read_only: bool) -> Iterator[subprocess.Popen[str]]:
    holder = hold(db, read_only=read_only)
    try:
        yield holder
    finally:
        holder.kill()
        holder.wait()


async def test_a_writer_is_refused_while_another_process_reads(db: Path) -> None:
    with held(db, read_only=True):
        with pytest.raises(DatabaseLockedError, match="another process is using") as info:
            async with EmbeddedStore(db):
                pass
        assert "retry" in info.value.hint
        async with EmbeddedStore(db, read_only=True) as reader:  # readers share the file
            assert (await reader.counts()).documents == 1
    async with EmbeddedStore(db) as writer:  # the reader gone, the file is free again
        await writer.write_versions([version("b", ["Charles Babbage built engines."], [[("Babbage", "Person")]])])
        assert (await writer.counts()).documents == 2


async def test_a_reader_is_refused_while_another_process_writes(db: Path) -> None:
    with held(db, read_only=False), pytest.raises(DatabaseLockedError, match="another process is using"):
        async with EmbeddedStore(db, read_only=True):
            pass
    async with EmbeddedStore(db, read_only=True) as reader:
        assert (await reader.counts()).documents == 1


async def test_a_closed_reader_lets_a_writer_in_and_a_refused_one_holds_nothing(db: Path) -> None:
    async with EmbeddedStore(db, read_only=True) as reader:
        assert (await reader.counts()).documents == 1
    # the closed reader's lock is gone: another process writes; a reader then is refused
    with held(db, read_only=False), pytest.raises(DatabaseLockedError):
        async with EmbeddedStore(db, read_only=True):
            pass
    async with EmbeddedStore(db) as writer:  # and the refused reader left no lock behind either
        assert (await writer.counts()).documents == 1
