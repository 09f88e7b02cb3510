"""Opening the embedded engine: LadybugDB, or Kuzu (archived upstream; LadybugDB is its maintained fork).

Both are imported lazily, so `import evigraph` stays fast. Engine errors are turned into
`StoreError`s that say what to do: the raw messages ("Could not set lock on file") name no fix,
and their type (`RuntimeError`) says nothing a caller can act on.

Neither engine opens the other's files (LadybugDB 0.22 calls a Kuzu file "not a valid Lbug
database file"), and the two cannot be loaded into one process: both register the same Python
types, so the second import fails ("type Database is already registered") and the process may
crash at exit. So an existing file is opened by the engine that wrote it, read from its first four
bytes (`KUZU`, `LBUG`), and a process that has one engine loaded refuses the other with a hint.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

from evigraph.errors import (
    DatabaseLockedError,
    EngineError,
    EngineUnavailableError,
    KnowledgeBaseMissingError,
    NotAKnowledgeBaseError,
    StoreError,
)
from evigraph.extras import install_hint

ENGINES = ("kuzu", "ladybug")
EXTENSIONS = ("fts", "vector", "algo")


_MAGIC = {b"KUZU": "kuzu", b"LBUG": "ladybug"}


def file_engine(path: Path) -> str | None:
    """The engine that wrote the database file at `path`, None for no file or one neither wrote."""
    try:
        with path.open("rb") as file:
            return _MAGIC.get(file.read(4))
    except OSError:
        return None


def import_engine(engine: str, path: Path | None = None) -> Any:
    """Import the engine module for the file at `path`.

    `auto` takes the engine that wrote the file; for a new file, the engine this process has
    loaded already, else LadybugDB, else Kuzu. LadybugDB is the default because a large ingest
    checkpoints there in a fraction of Kuzu's time (README, "Engines"), and Kuzu is no longer
    released; Kuzu stays for the files it wrote."""
    if engine not in (*ENGINES, "auto"):
        raise EngineUnavailableError(f"unknown engine {engine!r}", hint=f"use one of: auto, {', '.join(ENGINES)}")
    written_by = file_engine(path) if path is not None else None
    if written_by is not None and engine not in ("auto", written_by):
        raise EngineUnavailableError(
            f"{path} was written by {_TITLES[written_by]}, which {_TITLES[engine]} cannot open",
            hint=f"drop the engine option (auto opens each file with its own engine) or use engine={written_by!r}",
        )
    loaded = next((e for e in ENGINES if sys.modules.get(e) is not None), None)  # module named as its engine
    if written_by is not None:
        engine = written_by
    elif engine == "auto":
        engine = loaded or ("ladybug" if _installed("ladybug") else "kuzu")
    if not _installed(engine):
        raise EngineUnavailableError(f"{_TITLES[engine]} is not installed", hint=_install(engine))
    if loaded is not None and loaded != engine:
        raise EngineUnavailableError(
            f"this process has {_TITLES[loaded]} loaded, and {_TITLES[engine]} cannot be loaded beside it",
            hint=f"open {_TITLES[engine]} knowledge bases in another process",
        )
    try:
        module = importlib.import_module(engine)
    except ImportError as exc:  # found, but broken (a wheel for another platform, a missing library)
        raise EngineUnavailableError(f"{_TITLES[engine]} did not import: {exc}", hint=_install(engine)) from exc
    if not (hasattr(module, "Database") and hasattr(module, "Connection")):
        raise EngineUnavailableError(
            f"the {engine!r} module found is not {_TITLES[engine]} ({getattr(module, '__file__', '')})",
            hint=f"{_install(engine)}; Ladybug Tools' weather library takes the same module name",
        )
    return module


_TITLES = {"kuzu": "Kuzu", "ladybug": "LadybugDB", "auto": "the default engine"}


def _install(engine: str) -> str:
    """LadybugDB is a base dependency (a reinstall brings it back); Kuzu is the `kuzu` extra."""
    return install_hint("kuzu" if engine == "kuzu" else "")


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None  # None: made unimportable on purpose
    return importlib.util.find_spec(module) is not None


def engine_name(of: Any) -> str:
    """Which engine a module `import_engine` gave, or an object of it (a connection), belongs to."""
    name = of.__name__ if isinstance(of, types.ModuleType) else type(of).__module__
    return "kuzu" if name.partition(".")[0] == "kuzu" else "ladybug"


def open_database(module: Any, path: Path, *, read_only: bool, buffer_pool_mb: int, max_db_mb: int = 1 << 20) -> Any:
    """Open (or, when writable, create) the database file at `path`.

    `max_db_mb` is the address space the engine reserves for the file's pages (a power of two); the
    1 TiB default costs nothing but address space, which a process with a memory cap counts
    (`cypher_worker`).
    """
    if path.is_dir():
        raise NotAKnowledgeBaseError(
            f"{path} is a folder, not an evigraph database",
            hint="pass a file path with --db, e.g. --db ./evigraph.db",
        )
    if not path.exists():
        if read_only:
            raise KnowledgeBaseMissingError(
                f"no knowledge base at {path}",
                hint=f"create it with `evigraph ingest PATH --db {path}` or pass the right --db",
            )
        if path.is_symlink():
            raise NotAKnowledgeBaseError(f"{path} is a broken link", hint="pass another --db path")
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not os.access(path, os.R_OK if read_only else os.R_OK | os.W_OK):
        raise StoreError(
            f"no permission to {'read' if read_only else 'write'} {path}",
            hint="fix the file's permissions or pass another --db",
        )
    try:
        return module.Database(
            str(path),
            read_only=read_only,
            buffer_pool_size=buffer_pool_mb * 1024 * 1024,
            max_db_size=max_db_mb << 20,
            checkpoint_threshold=-1 if read_only else checkpoint_threshold_mb(buffer_pool_mb) << 20,
        )
    except RuntimeError as exc:
        raise translate_open_error(exc, path) from exc


def translate_open_error(exc: BaseException, path: Path) -> StoreError:
    text = str(exc)
    if "Could not set lock" in text:
        return locked_by_writer(path)
    if "not a valid" in text or "Unable to open database" in text or "corrupt" in text.lower():
        return NotAKnowledgeBaseError(
            f"{path} is not an evigraph database",
            hint="pass the path of a knowledge base with --db, or a new path to create one",
        )
    return StoreError(f"cannot open {path}: {text.splitlines()[0]}", hint="check the --db path")


def locked_by_writer(path: Path) -> DatabaseLockedError:
    """The file is held by a writer (or, for a writable open, by anyone): the engine's lock, or a
    reader's (`reader_lock`)."""
    return DatabaseLockedError(
        f"another process is using {path} for writing",
        hint="wait for it to finish or stop it (an ingest or a server), then retry",
    )


def engine_failure(exc: RuntimeError) -> EngineError:
    """An engine exception as the store's own error, keeping the engine's first line."""
    lines = str(exc).strip().splitlines()
    return EngineError(
        lines[0] if lines else type(exc).__name__,
        hint="retry; if it keeps failing, run `evigraph check` on this knowledge base",
    )


def load_extensions(conn: Any, engine_name: str) -> None:
    """Load Kuzu's full-text, vector and graph-algorithm extensions, linked into its wheel: a file
    holding an index an earlier release made (`upgrades`) cannot be opened without them.

    LadybugDB downloads its extensions at first use, which fails offline, and its files are all
    new, holding no such index; nothing else the store runs needs one (the stemmer is PyStemmer's,
    `bm25`), so none is loaded there."""
    if engine_name != "kuzu":
        return
    for ext in EXTENSIONS:
        try:
            conn.execute(f"LOAD EXTENSION {ext}")
        except RuntimeError as exc:
            if "already loaded" in str(exc).lower():
                continue
            raise EngineUnavailableError(
                f"the Kuzu {ext} extension did not load: {exc}",
                hint="reinstall kuzu==0.11.3, whose extensions are built in",
            ) from exc


BUFFER_POOL_ENV = "EVIGRAPH_BUFFER_POOL_MB"

MAX_BUFFER_POOL_MB = 16_384


def default_buffer_pool_mb(path: Path | None = None, *, read_only: bool = False) -> int:
    """The engine's page cache: a quarter of the machine's memory, within 512 MB and 16 GB, or
    `EVIGRAPH_BUFFER_POOL_MB`; a read-only open takes no more than its file needs.

    It was a fixed 512 MB, and a knowledge base outgrew it: ingesting 100,000 generated passages
    (1.3 million relations with the rules extractor) failed once the file passed 1.2 GB, a
    checkpoint at COMMIT finding "the buffer pool is full", after which the engine crashed. The
    pool is address space the engine fills as it needs pages, not memory taken up front, so a
    larger cap costs a small knowledge base nothing (the engine's own default is 80% of memory).

    But the engine evicts nothing until the pool is full, so a long-lived reader (`evigraph
    serve`, `mcp`) of a large file grew toward the whole cap as queries touched pages. A reader
    never writes pages, so it is sized from the file (and its write-ahead log): every page of it
    once, half as much again for query intermediates (joins, sorts), plus 128 MB, within 256 MB
    and the machine's cap.
    """
    if configured := os.environ.get(BUFFER_POOL_ENV, "").strip():
        try:
            return max(64, int(configured))
        except ValueError:
            raise StoreError(
                f"{BUFFER_POOL_ENV}={configured!r} is not a number of megabytes", hint=f"set {BUFFER_POOL_ENV}=2048"
            ) from None
    try:
        total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): the floor
        return MIN_BUFFER_POOL_MB
    cap = int(min(max(total_mb // 4, MIN_BUFFER_POOL_MB), MAX_BUFFER_POOL_MB))
    if not read_only or path is None:
        return cap
    file_mb = sum(_size(candidate) for candidate in (path, path.with_name(path.name + ".wal"))) // (1 << 20)
    return int(min(cap, max(MIN_READER_POOL_MB, file_mb * 3 // 2 + 128)))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    except OSError:
        return 0


MIN_READER_POOL_MB = 256

MIN_BUFFER_POOL_MB = 512
"""The page cache's floor; the file's size does not depend on it. The engine's
space settings stay at its defaults, measured on hotpotqa (1,942 passages, 384-dim vectors, rules
extractor): a `checkpoint_threshold` of 16 MB (the default) left a 293 MB file, 64 MB 206 MB and
256 MB 112 MB, but the ingest took about 65 s, 95 s and 110 s (the one checkpoint of 256 MB took
53 s); `compression` off made files larger (200 notes: 61 MB against 54). `evigraph compact`
gives the space back instead (`compaction`).

Once relationships held no lists (`packed`), a threshold grown with the file (half its size, at
most a quarter of the pool) looked worth it: a checkpoint rewrites every touched node group of a
relationship table, so its cost follows the table, and fewer of them cut a 10,000-passage
ingest's commit time from 12.0 s to 4.7 s. But the engine keeps what the log holds in the pool,
and updating relations then needs far more: early in a 100,000-passage ingest, with a 65 MB log
beside a 165 MB file, an update of relations found the 512 MB pool full; the engine then
answered every statement with "Write-write conflict of updating the same row" and crashed
(segfault). Twice, the same way. That pool was a fixed 512 MB; it is sized from the machine now,
and the log grows with it (`checkpoint_threshold_mb`)."""


ENGINE_CHECKPOINT_MB = 16
"""The engine's own default."""

CHECKPOINT_POOL_SHARE = 48
"""The write-ahead log may grow to this share of the page cache before a commit checkpoints it.

A write group of 4,096 generated passages logs about 60 MB, so at the engine's 16 MB every
commit checkpointed, and a checkpoint rewrites every touched node group of the relationship
tables: its cost follows the file, not the write (3.3 s at 30,000 passages, 6.2 s at 100,000).
LadybugDB, 100,000 generated passages, a 6 GB pool (one session, same corpus): a 128 MB log
checkpointed every second commit, commits took 55 s in all against 118 s, the ingest 505 s
against 566 s (1.12x as fast), and its peak was 1,990 MB against 1,926 MB (what the log holds
stays in the pool), which halving the write group paid back (`EmbeddedStore.write_group_passages`).
The share keeps the log an eighth of the size that crashed Kuzu (above): the 512 MB floor keeps
the engine's 16 MB."""

MAX_CHECKPOINT_MB = 128
"""Past two write groups' log the checkpoints saved less than the memory the log held."""


def checkpoint_threshold_mb(buffer_pool_mb: int) -> int:
    """The log size (MB) at which a commit checkpoints, for a page cache of `buffer_pool_mb`."""
    return max(ENGINE_CHECKPOINT_MB, min(MAX_CHECKPOINT_MB, buffer_pool_mb // CHECKPOINT_POOL_SHARE))
