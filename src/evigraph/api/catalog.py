"""The knowledge bases one `evigraph serve` serves, by name, each opened once and kept open.

With --db the server has one. With --db-dir it has every NAME.db file in the folder, listed
when asked for (a file added later is served too) and opened on first use: opening loads a
knowledge base's indexes, and a folder may hold many that nobody asks for. A name is only ever
looked up among the files listed, never joined to the folder, so no request reaches another
file; a name shaped like a path is refused outright, as the client sending it has a bug.

Symbolic links are never served, not even one to a file inside the folder: a link (the database
file, or a file the engine opens beside it, such as its write-ahead log) may lead outside the
folder, and deciding that it does not means resolving it, which a link swapped afterwards
defeats; a link inside would only serve one file under two names, which one process cannot open
twice. Whoever wants a knowledge base served puts the file itself in the folder. Links are
checked when the folder is listed and again just before a knowledge base is opened.

Each knowledge base gets its own backend, so its evidence sessions are its own: a number
handed out for one knowledge base is never valid in another.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from evigraph.api.bodies import ApiError, ApiProblem
from evigraph.errors import EvigraphError
from evigraph.mcp.backend import LocalBackend
from evigraph.mcp.forwarding import ForwardingListener, pointer_path
from evigraph.mcp.main import McpConfig, local_backend
from evigraph.store import embedded_files

if TYPE_CHECKING:
    from starlette.requests import Request

log = logging.getLogger("evigraph.api")

DB_QUERY = "db"
DB_HEADER = "x-evigraph-db"
DB_SUFFIX = ".db"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
CHOOSE = "choose one with ?db=NAME or the X-Evigraph-Db header (GET /api/dbs lists them)"


def valid_name(name: str) -> bool:
    """Whether `name` can name a knowledge base: a plain file name stem, never a path or `..`."""
    return _NAME.fullmatch(name) is not None and ".." not in name


class Catalog:
    """The served knowledge bases by name, and their backends once opened."""

    def __init__(self, toolkit: McpConfig, folder: Path | None = None, secrets: tuple[str, ...] = ()) -> None:
        """`toolkit` holds the options every knowledge base is served with (its `db` is the one
        served, unless `folder` is given); `secrets` are masked in errors beside the environment's."""
        self.toolkit = toolkit
        self.folder = folder
        self.secrets = secrets
        self._single = None if folder is not None else _single_name(toolkit)
        self._open: dict[str, tuple[LocalBackend, ForwardingListener | None]] = {}
        self._opening = asyncio.Lock()

    @property
    def multi(self) -> bool:
        return self.folder is not None

    def names(self) -> list[str]:
        if self._single is not None:
            return [self._single]
        return sorted(set(self._files()) | set(self._open))

    def default(self) -> str | None:
        """The knowledge base a request that names none gets: the only one, if there is only one."""
        names = self.names()
        return names[0] if len(names) == 1 else None

    def is_open(self, name: str) -> bool:
        return name in self._open

    async def select(self, request: Request) -> tuple[str, LocalBackend]:
        """The knowledge base a request names (`?db=` wins over `X-Evigraph-Db`), opened."""
        raw = request.query_params.get(DB_QUERY) or request.headers.get(DB_HEADER) or None
        name = self.resolve(raw)
        return name, await self.open(name)

    def resolve(self, raw: str | None) -> str:
        """The served name `raw` selects, or the default; else an ApiProblem saying what exists."""
        names = self.names()
        if raw is None:
            if len(names) == 1:
                return names[0]
            if not names:
                raise ApiProblem(
                    404,
                    ApiError(
                        error="no knowledge base in the served folder",
                        hint="build one there: evigraph ingest DOCS --db DIR/NAME.db",
                        available=[],
                    ),
                )
            raise ApiProblem(
                400, ApiError(error="this server serves several knowledge bases", hint=CHOOSE, available=names)
            )
        if not valid_name(raw):
            raise ApiProblem(
                400,
                ApiError(
                    error="a knowledge base is chosen by name, never by path",
                    hint=f"send one of the names GET /api/dbs lists: {', '.join(names) or 'none yet'}",
                    available=names,
                ),
            )
        if raw not in names:
            self._refuse_links(raw, names)
            raise ApiProblem(404, ApiError(error=f"no knowledge base named {raw!r}", hint=CHOOSE, available=names))
        return raw

    def _refuse_links(self, name: str, names: list[str]) -> None:
        """404 naming the link when `name`'s file, or one the engine or a forwarder opens beside
        it, is a symbolic link: the file behind it may lie outside the served folder."""
        if self.folder is None:
            return
        db = self.folder / f"{name}{DB_SUFFIX}"
        for path in (*embedded_files(db), pointer_path(db)):
            if path.is_symlink():
                raise ApiProblem(
                    404,
                    ApiError(
                        error=f"{path.name} in the served folder is a symbolic link, and links are never served "
                        "(one may lead outside the folder)",
                        hint="put the knowledge base file itself in the folder (move or copy it there)",
                        available=names,
                    ),
                )

    async def open(self, name: str) -> LocalBackend:
        """The backend serving `name`, opening the knowledge base the first time it is asked for."""
        served = self._open.get(name)
        if served is not None:
            return served[0]
        async with self._opening:
            served = self._open.get(name)
            if served is None:
                served = await self._open_one(name)
                self._open[name] = served
        return served[0]

    async def _open_one(self, name: str) -> tuple[LocalBackend, ForwardingListener | None]:
        if self.folder is None:
            config = self.toolkit  # opened at start: a failure is the command's to say, and it exits
        else:
            self._refuse_links(name, self.names())  # again: a link may have been put there since the listing
            config = dataclasses.replace(self.toolkit, db=self.folder / f"{name}{DB_SUFFIX}")
        try:
            backend = await local_backend(config)
        except EvigraphError as exc:
            if self.folder is None:
                raise
            message, hint = (_path_free(text, self.folder) for text in (exc.message, exc.hint))
            raise ApiProblem(503, ApiError(error=f"cannot open knowledge base {name!r}: {message}", hint=hint)) from exc
        backend.secrets = (*backend.secrets, *self.secrets)
        return backend, await _listen(config.db, backend)

    async def close(self) -> None:
        """Stop serving other processes, then close every knowledge base opened."""
        opened, self._open = self._open, {}
        for backend, listener in opened.values():
            if listener is not None:
                await listener.close()
            await backend.toolkit.kb.close()

    def _files(self) -> list[str]:
        assert self.folder is not None
        found = []
        with contextlib.suppress(OSError), os.scandir(self.folder) as entries:
            for entry in entries:
                stem = entry.name[: -len(DB_SUFFIX)]
                if entry.name.endswith(DB_SUFFIX) and valid_name(stem) and entry.is_file(follow_symlinks=False):
                    found.append(stem)
        return found


def _path_free(text: str, folder: Path) -> str:
    """`text` without the served folder's path: clients learn names, never where the files are."""
    return text.replace(f"{folder}{os.sep}", "").replace(str(folder), "the served folder")


def _single_name(toolkit: McpConfig) -> str:
    """What GET /api/dbs calls the one knowledge base: its file name without .db, or its graph's name."""
    db = toolkit.db
    if isinstance(db, Path):
        return db.name[: -len(DB_SUFFIX)] if db.name.endswith(DB_SUFFIX) and len(db.name) > len(DB_SUFFIX) else db.name
    return db.graph or "default"


async def _listen(db: object, backend: LocalBackend) -> ForwardingListener | None:
    """Serve the knowledge base to other evigraph processes, as `evigraph mcp` does: an
    `evigraph mcp` an IDE starts on the same file then forwards to this server instead of
    failing on the lock, and `evigraph status` and `search` are answered by it."""
    if not isinstance(db, Path):
        return None  # a server graph: every process opens it itself
    listener = ForwardingListener(db, backend)
    try:
        await listener.start()
    except OSError as exc:
        log.warning("cannot serve %s to other evigraph processes: %s", db.name, exc)
        return None
    return listener
