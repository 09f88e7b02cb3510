"""Creating a knowledge base file so that a crash leaves either nothing or a complete schema.

Kuzu 0.11.3 builds a full-text index in steps that each commit: a process killed between them
(in its first second) left a file on which every later ingest failed with `Table ...fts_docs
already exists` (the index's hidden tables exist, the index does not, and nothing can drop
them), and in one trial of 30 a file that no longer opened. So the schema is built in a hidden
sibling file, checkpointed by closing it, and only then linked into place under the real name:
the real name holds a complete knowledge base or nothing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evigraph.errors import StoreError
from evigraph.store.embedded.executor import Tx

SIDECARS = (".wal", ".shadow")
"""Files the engine keeps beside a database: its write-ahead log and checkpoint shadow pages."""

_BUILD_SUFFIX = ".creating"


class UnfinishedSchema(Exception):
    """An evigraph database whose schema creation never finished and which holds no rows."""


def sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + s) for s in SIDECARS]


def create_database_file(
    module: Any,
    path: Path,
    *,
    buffer_pool_mb: int,
    prepare: Callable[[Any], None],
    build: Callable[[Tx], None],
) -> None:
    """Build a knowledge base beside `path` and link it in, unless another process got there first.

    `prepare` readies the connection (extensions), `build` creates the schema.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_builds(path)
    tmp = build_path(path)
    try:
        db = module.Database(str(tmp), buffer_pool_size=buffer_pool_mb * 1024 * 1024, max_db_size=1 << 40)
        try:
            conn = module.Connection(db)
            try:
                prepare(conn)
                build(Tx(conn))
            finally:
                conn.close()
        finally:
            db.close()  # checkpoints: everything is in the main file now
        if any(p.exists() for p in sidecars(tmp)):
            raise StoreError(
                f"the new knowledge base {path} was not checkpointed when closed",
                hint="retry; if it persists, report the engine version",
            )
        fsync_file(tmp)
        _link_into_place(tmp, path)
    finally:
        discard(tmp)


def finish_interrupted_checkpoint(module: Any, path: Path) -> None:
    """Replay the shadow pages a process killed while checkpointing left, so read-only opens work.

    The engine refuses to open such a file read-only ("Couldn't replay shadow pages under
    read-only mode"): `status`, `search` and read-only servers failed after 1 in 40 killed
    ingests in bench/crash.py until some writer opened the file. A writable open replays and
    checkpoints them. If a writer holds the file, it is the one checkpointing: leave it.
    """
    if not path.with_name(path.name + ".shadow").exists():
        return
    try:
        module.Database(str(path), buffer_pool_size=64 * 1024 * 1024, max_db_size=1 << 40).close()
    except RuntimeError:
        return  # locked by a live writer, or unreadable: the read-only open says what is wrong


def _link_into_place(tmp: Path, path: Path) -> None:
    """Give the finished file its real name; a hard link never replaces a file that appeared meanwhile."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return  # another process created it; its file is complete too
    except OSError:
        # No hard links on this file system: a rename is atomic too, but could replace a
        # knowledge base created in the last instant, so only when the name is still free.
        if not os.path.lexists(path):
            os.replace(tmp, path)
    fsync_dir(path.parent)


def discard(path: Path) -> None:
    """Remove a database file and its sidecars (an unfinished build, never user data)."""
    for p in (path, *sidecars(path)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def build_path(path: Path, suffix: str = _BUILD_SUFFIX) -> Path:
    """A hidden sibling of `path` to build a database in, named for this process (`remove_stale_builds`)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{suffix}")


def remove_stale_builds(path: Path, suffix: str = _BUILD_SUFFIX) -> None:
    """Remove builds left by processes that died while building beside `path` (creating or compacting it)."""
    for found in path.parent.glob(f".{path.name}.*{suffix}"):
        pid = found.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            discard(found)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make the new name durable: a power cut must not undo the link (POSIX only)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
