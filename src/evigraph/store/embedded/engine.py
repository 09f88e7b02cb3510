"""Opening the embedded engine: Kuzu, or LadybugDB (its maintained successor, same API).

Both are imported lazily, so `import evigraph` stays fast. Engine errors are turned into
`StoreError`s that say what to do: the raw messages ("Could not set lock on file") name no fix,
and their type (`RuntimeError`) says nothing a caller can act on.
"""

from __future__ import annotations

import importlib
import os
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
_LADYBUG_MODULES = ("real_ladybug", "ladybug")


def import_engine(engine: str) -> Any:
    """Import the engine module; `auto` prefers Kuzu, whose extensions are linked in."""
    if engine not in (*ENGINES, "auto"):
        raise EngineUnavailableError(f"unknown engine {engine!r}", hint=f"use one of: auto, {', '.join(ENGINES)}")
    if engine in ("kuzu", "auto"):
        try:
            return importlib.import_module("kuzu")
        except ImportError as exc:
            if engine == "kuzu":
                raise EngineUnavailableError(
                    "the kuzu package is not installed", hint="pip install kuzu==0.11.3"
                ) from exc
    for name in _LADYBUG_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "Database") and hasattr(module, "Connection"):
            return module
    raise EngineUnavailableError(
        "LadybugDB is not installed",
        hint=f'{install_hint("ladybug")}, or use engine="kuzu" (the default)',
    )


def engine_name(module: Any) -> str:
    """Which engine a module `import_engine` gave is, as `load_extensions` wants it named."""
    return "kuzu" if module.__name__ == "kuzu" else "ladybug"


def open_database(module: Any, path: Path, *, read_only: bool, buffer_pool_mb: int) -> Any:
    """Open (or, when writable, create) the database file at `path`."""
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
            max_db_size=1 << 40,
        )
    except RuntimeError as exc:
        raise translate_open_error(exc, path) from exc


def translate_open_error(exc: BaseException, path: Path) -> StoreError:
    text = str(exc)
    if "Could not set lock" in text:
        return DatabaseLockedError(
            f"another process is using {path} for writing",
            hint="wait for it to finish or stop it (an ingest or a server), then retry",
        )
    if "not a valid" in text or "Unable to open database" in text or "corrupt" in text.lower():
        return NotAKnowledgeBaseError(
            f"{path} is not an evigraph database",
            hint="pass the path of a knowledge base with --db, or a new path to create one",
        )
    return StoreError(f"cannot open {path}: {text.splitlines()[0]}", hint="check the --db path")


def engine_failure(exc: RuntimeError) -> EngineError:
    """An engine exception as the store's own error, keeping the engine's first line."""
    lines = str(exc).strip().splitlines()
    return EngineError(
        lines[0] if lines else type(exc).__name__,
        hint="retry; if it keeps failing, run `evigraph check` on this knowledge base",
    )


def load_extensions(conn: Any, engine_name: str) -> None:
    """Load full-text, vector and graph-algorithm extensions, which the store's queries need."""
    for ext in EXTENSIONS:
        try:
            conn.execute(f"LOAD EXTENSION {ext}")
        except RuntimeError as exc:
            if "already loaded" in str(exc).lower():
                continue
            if engine_name == "kuzu":
                raise EngineUnavailableError(
                    f"the Kuzu {ext} extension did not load: {exc}",
                    hint="reinstall kuzu==0.11.3, whose extensions are built in",
                ) from exc
            raise EngineUnavailableError(
                f"LadybugDB cannot load its {ext} extension ({str(exc).splitlines()[0]})",
                hint=f"LadybugDB downloads extensions at first use: run `INSTALL {ext}` once with "
                "internet access, or use engine='kuzu', whose extensions work offline",
            ) from exc
