"""Compacting an embedded knowledge base: rebuild it in a file beside it, then swap the files.

Kuzu 0.11.3 never shrinks a database file. Pages freed by a delete or a rewrite go to a free list
that only a later checkpoint may reuse, and checkpoints rewrite a lot: a relationship table's CSR
header is written whole, 1 MB per direction and column (offsets and lengths of 131,072 node
slots, uncompressed), so a session that touches a relationship table writes 4 MB for it however
few rows changed, and a node table takes ~1.1 MB of primary-key index once it holds a row. Sizes
on disk (`compact` after the arrow):

  3 tiny files (txt, md, pdf), fresh                           37.2 MB -> 31.6 MB
  the same after deleting one of them                          58.6 MB -> 29.2 MB
  200 generated notes, after 4 sessions deleting and
    re-ingesting one note each (fresh: 53.8 MB)               140.9 MB -> 49.4 MB
  hotpotqa (1,942 passages, 384-dim vectors), fresh           292.8 MB -> 113.0 MB in ~20 s

The engine's settings give nothing back: `compression` is on by default (off, the 200 notes took
61 MB fresh); a larger `checkpoint_threshold` makes a big ingest smaller but slower (see
`EmbeddedStore`). So compaction copies every row into a new file (`table_copy`), builds the
indexes the old file had (a current release makes none) once over the copied rows, counts every
table in the new file after its checkpoint, and only then renames it over the old one: a failure
at any step removes the new file and leaves the old one as it was.

The store must hold the file for writing: that proves no other process has it open (the engine
locks the file, read-only opens too). Between closing the old database and the rename, this
process takes the engine's own lock on the old file, so a process that opened it in that instant
makes the compaction stop, not lose its writes. The rename is the point of no return: once the new
file is in place the compaction is done, even when a process opens that new file before this one
opens it again (then the report says the store stays closed, and why, rather than failing).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evigraph.errors import DatabaseLockedError, StoreError
from evigraph.store.compaction import CompactProgress, CompactReport
from evigraph.store.embedded.creation import (
    build_path,
    discard,
    fsync_dir,
    fsync_file,
    remove_stale_builds,
    sidecars,
)
from evigraph.store.embedded.executor import Executor, Statements, Tx
from evigraph.store.embedded.properties import TABLES as PROPERTY_TABLES
from evigraph.store.embedded.schema import DDL, META_TABLE, RETIRED_FTS_INDEXES
from evigraph.store.embedded.table_copy import Table, copy_table, count_rows, read_tables, retyped

COMPACT_SUFFIX = ".compacting"

MIN_SAVING = 0.01
"""The share of the file a rewrite must give back to replace it: a compacted file compacts again
to within a few bytes, and a swap that saves nothing only costs the old file's page cache."""

CHECKPOINT_THRESHOLD_MB = 64
"""Write-ahead log size at which the new file is checkpointed while rows are copied in. Every
checkpoint rewrites the relationship tables' headers, so fewer checkpoints leave fewer free pages
in the new file. Hotpotqa above: 122 MB with the engine's 16 MB (19 s), 113 MB with 64 MB (16 s),
109 MB with 256 MB (21 s) and 1 GB (26 s); beyond 64 MB the rows wait in memory for little more."""
_UNCHANGED = "the knowledge base was left as it was"

swap_hook: Callable[[str, Path], None] | None = None
"""Tests only: called with ("released", path) once the old file is closed and with ("replaced",
path) once the new one is in place, the two instants another process may open the file in.
tests/cli/test_cli_compact.py opens it from a second process there; nothing else sets it."""


class CompactionStopped(StoreError):
    """The caller stopped the compaction (Ctrl-C); the old file is kept."""


@dataclass
class Compacted:
    """The open knowledge base being compacted, and how to let go of its file and take it back."""

    executor: Executor
    path: Path
    module: Any
    prepare: Callable[[Any], None]
    """Readies a new connection (loads the engine's extensions)."""
    release: Callable[[], None]
    """Closes the store's database, checkpointing it."""
    reacquire: Callable[[], None]
    """Opens it again (the compacted file, or the old one after a failure)."""
    buffer_pool_mb: int = 256


@dataclass
class _Copied:
    counts: dict[str, int] = field(default_factory=dict)
    indexes: dict[str, str] = field(default_factory=dict)
    """Full-text (and any other) index name -> the statement that builds it."""
    converted: bool = False
    """Lists this release keeps as text were packed: the new file replaces the old one whatever it saves."""


def disk_bytes(path: Path) -> int:
    """What a database takes on disk: its file and the engine's files beside it."""
    return sum(p.stat().st_size for p in (path, *sidecars(path)) if p.exists())


async def run(source: Compacted, progress: CompactProgress | None = None) -> CompactReport:
    """`compact` in a worker thread. Cancelled (Ctrl-C), it stops at its next step and waits for the
    thread to clean up, so the store is open again, on the old file or the new one, when it returns."""
    stop = threading.Event()
    task = asyncio.ensure_future(asyncio.to_thread(compact, source, progress, stop))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        stop.set()
        with contextlib.suppress(BaseException):
            await task
        raise


def compact(
    source: Compacted, progress: CompactProgress | None = None, stop: threading.Event | None = None
) -> CompactReport:
    """Rebuild `source` in a file beside it and put that file in its place if it is smaller."""
    started = time.monotonic()
    real = source.path.resolve()  # a link keeps pointing at the knowledge base, now compacted
    remove_stale_builds(real, COMPACT_SUFFIX)
    tmp = build_path(real, COMPACT_SUFFIX)
    report = CompactReport(db=str(source.path), bytes_before=0, bytes_after=0)
    try:
        with source.executor.writes_paused():  # from the copy to the swap: no write would be missed
            source.executor.checkpoint()  # the size the file keeps once closed, not before its log is folded in
            before = report.bytes_before = report.bytes_after = disk_bytes(source.path)
            copied = _build(source, tmp, _Reporter(progress, stop))
            report.rows = sum(copied.counts.values())
            _verify(source, tmp, copied, _Reporter(progress, stop))
            if copied.converted or disk_bytes(tmp) <= before * (1 - MIN_SAVING):
                report.reopen_error = _swap(source, tmp, real)
                report.bytes_after, report.replaced = disk_bytes(source.path), True
    finally:
        discard(tmp)
    report.seconds = round(time.monotonic() - started, 3)
    return report


class _Reporter:
    """Progress and the stop flag, checked at every step."""

    def __init__(self, progress: CompactProgress | None, stop: threading.Event | None) -> None:
        self._progress = progress
        self._stop = stop

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._stop is not None and self._stop.is_set():
            raise CompactionStopped("compaction stopped", hint=_UNCHANGED)
        if self._progress is not None:
            self._progress(stage, done, total)


def _build(source: Compacted, tmp: Path, report: _Reporter) -> _Copied:
    """The new file: the schema's tables, every row of the old file, then its indexes; closed."""
    db = source.module.Database(str(tmp), buffer_pool_size=source.buffer_pool_mb * 1024 * 1024, max_db_size=1 << 40)
    try:
        conn = source.module.Connection(db)
        statements = Statements(conn)
        try:
            source.prepare(conn)
            target = Tx(conn, statements)
            with _engine_errors():
                target.execute(f"CALL checkpoint_threshold={CHECKPOINT_THRESHOLD_MB * 1024 * 1024}").close()
                target.execute("BEGIN TRANSACTION").close()
                for statement in DDL:
                    target.execute(statement).close()
                target.execute("COMMIT").close()
            copied: _Copied = source.executor.read_sync(lambda tx: _copy_rows(tx, target, report))
            with _engine_errors():
                for i, statement in enumerate(copied.indexes.values()):
                    report("index", i, len(copied.indexes))
                    target.execute(statement).close()
                report("index", len(copied.indexes), len(copied.indexes))
                _check_counts(target, read_tables(target), copied, "before it was written to disk")
        finally:
            statements.clear()
            conn.close()
    finally:
        db.close()  # checkpoints: every row is in the new file now
    if any(p.exists() for p in sidecars(tmp)):
        raise StoreError("the compacted file was not checkpointed when closed", hint=_UNCHANGED)
    return copied


def _copy_rows(source: Tx, target: Tx, report: _Reporter) -> _Copied:
    """Every row of every table, read in one transaction so the copy is one consistent state."""
    tables = read_tables(source)
    _carry_property_columns(tables, target)
    _check_schema(tables, {t.name: t for t in read_tables(target)})
    copied = _Copied(counts={t.name: count_rows(source, t) for t in tables})
    copied.converted = any(retyped(t.name, c) != c.type for t in tables for c in t.columns)
    total, done = sum(copied.counts.values()), 0

    def step(rows: int) -> None:
        nonlocal done
        done += rows
        report("copy", done, total)

    report("copy", 0, total)
    for table in tables:
        with _engine_errors():
            written = copy_table(source, target, table, step)
        if written != copied.counts[table.name]:
            raise StoreError(
                f"compaction read {written} rows of {table.name}, which holds {copied.counts[table.name]}",
                hint=f"{_UNCHANGED}; run `evigraph check --repair`, then compact again",
            )
    found = {
        name: text
        for name, text in _made_indexes(source).items()
        if name not in RETIRED_FTS_INDEXES  # an old file's: this release drops them, not copies them
    }
    copied.indexes = found  # an index of a later release travels with its own definition
    return copied


def _made_indexes(tx: Tx) -> dict[str, str]:
    """Indexes a statement made, by name, with that statement. LadybugDB also lists each table's
    primary-key index (`_PK`, no definition), which the engine makes with the table."""
    rows = tx.rows("CALL SHOW_INDEXES() RETURN index_name AS name, index_definition AS text")
    return {r["name"]: r["text"] for r in rows if r["text"]}


def _carry_property_columns(old: list[Table], target: Tx) -> None:
    """Give the new file the columns declared properties added (`embedded.properties`): the schema
    does not create them, and their values must travel with the rows."""
    for table in old:
        if table.name in PROPERTY_TABLES.values():
            have = {c.name for c in next(t for t in read_tables(target) if t.name == table.name).columns}
            for c in table.columns:
                if c.name not in have:
                    target.execute(f"ALTER TABLE {table.name} ADD `{c.name}` {c.type}").close()


def _check_schema(old: list[Table], new: dict[str, Table]) -> None:
    """Refuse to compact what the new file could not hold: a table or column this release does not create."""
    for table in old:
        made = new.get(table.name)
        missing = (
            sorted({(c.name, retyped(table.name, c)) for c in table.columns} - {(c.name, c.type) for c in made.columns})
            if made
            else []
        )
        if made is None or missing or made.key != table.key or set(made.ends) != set(table.ends):
            what = f"table {table.name}" if made is None else f"{table.name} as this release defines it ({missing})"
            raise StoreError(
                f"the knowledge base holds {what}, which this evigraph does not create",
                hint=f"{_UNCHANGED}; compact it with the evigraph release that wrote it",
            )


def _check_counts(tx: Tx, tables: list[Table], copied: _Copied, when: str) -> None:
    for table in tables:
        want, got = copied.counts.get(table.name, 0), count_rows(tx, table)
        if got != want:
            raise StoreError(
                f"the compacted file holds {got} rows of {table.name} {when}, the knowledge base {want}",
                hint=f"{_UNCHANGED}; report it",
            )


def _verify(source: Compacted, tmp: Path, copied: _Copied, report: _Reporter) -> None:
    """Open the new file as a reader will and count again: the check covers what the checkpoint wrote."""
    db = source.module.Database(str(tmp), read_only=True, buffer_pool_size=64 * 1024 * 1024, max_db_size=1 << 40)
    try:
        conn = source.module.Connection(db)
        try:
            source.prepare(conn)
            tx = Tx(conn)
            with _engine_errors():
                tables = read_tables(tx)
                for i, table in enumerate(tables):
                    report("verify", i, len(tables))
                    _check_counts(tx, [table], copied, "after its checkpoint")
                indexes = set(_made_indexes(tx))
                mark = tx.column(f"MATCH (m:{META_TABLE} {{key: 'app'}}) RETURN m.value")
            if indexes != set(copied.indexes) or mark != ["evigraph"]:
                raise StoreError(
                    f"the compacted file lacks indexes ({sorted(set(copied.indexes) - indexes)}) or its mark",
                    hint=f"{_UNCHANGED}; report it",
                )
            report("verify", len(tables), len(tables))
        finally:
            conn.close()
    finally:
        db.close()


def _swap(source: Compacted, tmp: Path, real: Path) -> str:
    """Put `tmp` in place of the knowledge base, holding the old file so no process opens it meanwhile.

    Raises, with the old file kept, when the swap did not happen. Once it has, nothing undoes it:
    returns why this process could not open the compacted file again (another process opened it
    first), or "" when the store is open on it.
    """
    fsync_file(tmp)
    source.release()
    try:
        _hook("released", real)
        with _locked(real):
            if any(p.exists() for p in sidecars(source.path)):
                raise StoreError("the knowledge base kept a write-ahead log after closing", hint=_UNCHANGED)
            os.replace(tmp, real)
            fsync_dir(real.parent)
    except BaseException:
        with contextlib.suppress(Exception):  # the old file; the process that took it may hold it
            source.reacquire()
        raise
    try:
        _hook("replaced", real)
        source.reacquire()
    except Exception as exc:  # the compaction is done whatever this says: the caller reports both
        return str(exc) or type(exc).__name__
    return ""


def _hook(stage: str, path: Path) -> None:
    if swap_hook is not None:
        swap_hook(stage, path)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the lock the engine takes on a database file (fcntl, whole file, exclusive).

    A process that opened the file after this one closed it holds that lock already: then this
    fails, and the old file stays, with whatever that process writes.
    """
    try:
        import fcntl
    except ImportError:  # Windows: a file open in another process cannot be renamed over there
        yield
        return
    fd = os.open(path, os.O_RDWR)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise DatabaseLockedError(
                f"not compacted: another process opened {path} while it was being compacted, so the old file was kept",
                hint=f"{_UNCHANGED}; stop that process and run `evigraph compact` again",
            ) from exc
        yield
    finally:
        os.close(fd)  # releases the lock, on the old file that the new one replaced


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    """An engine failure while building the new file, as the store's own error."""
    try:
        yield
    except RuntimeError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"compaction failed: {first}", hint=_UNCHANGED) from exc
