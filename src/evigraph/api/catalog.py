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

An open knowledge base holds its page cache and in-memory indexes: a 45 MB file (2wikimultihopqa,
1,417 passages, rules extractor) took 240-250 MB of the server's memory each, 12 of them 3.1 GB.
So at most `max_open` stay open: past it, the least recently used one with no request in flight
is closed, its evidence sessions with it (their clients are told so when they cite an old
number), and opened again by the next request naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import os
import re
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evigraph.api.bodies import ApiError, ApiProblem
from evigraph.errors import EvigraphError, ToolError
from evigraph.evidence.ledger import Forgotten
from evigraph.kb import embedded_files
from evigraph.mcp.main import McpConfig, local_backend
from evigraph.memory import give_back_memory
from evigraph.serving.backend import LocalBackend
from evigraph.serving.forwarding import ForwardingListener, pointer_path

if TYPE_CHECKING:
    from starlette.requests import Request

log = logging.getLogger("evigraph.api")

DB_QUERY = "db"
DB_HEADER = "x-evigraph-db"
DB_SUFFIX = ".db"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
CHOOSE = "choose one with ?db=NAME or the X-Evigraph-Db header (GET /api/dbs lists them)"
MAX_OPEN = 4
"""Knowledge bases a --db-dir server keeps open at once. Each took 240-250 MB on a 45 MB file (and
the issue's 31 MB files about 165 MB), so four hold about 1 GB; reopening one cost its first request
1.5-2.5 s (30-40 ms once open; bench/serving_memory.py). `--max-open` and EVIGRAPH_SERVE_MAX_OPEN change it."""


def valid_name(name: str) -> bool:
    """Whether `name` can name a knowledge base: a plain file name stem, never a path or `..`."""
    return _NAME.fullmatch(name) is not None and ".." not in name


@dataclass
class _Served:
    backend: LocalBackend
    listener: ForwardingListener | None
    requests: int = 0
    """Requests of this server using it now; calls forwarded by other processes count in the backend."""

    @property
    def busy(self) -> bool:
        return self.requests > 0 or self.backend.calls_in_flight > 0


class Catalog:
    """The served knowledge bases by name, and their backends once opened (at most `max_open`)."""

    def __init__(
        self,
        toolkit: McpConfig,
        folder: Path | None = None,
        secrets: tuple[str, ...] = (),
        max_open: int = MAX_OPEN,
    ) -> None:
        """`toolkit` holds the options every knowledge base is served with (its `db` is the one
        served, unless `folder` is given); `secrets` are masked in errors beside the environment's."""
        self.toolkit = toolkit
        self.folder = folder
        self.secrets = secrets
        self.max_open = max_open
        self._single = None if folder is not None else _single_name(toolkit)
        self._open: OrderedDict[str, _Served] = OrderedDict()  # least recently used first
        self._forgotten: dict[str, dict[str, Forgotten]] = {}  # sessions of the knowledge bases closed
        self._opening = asyncio.Lock()  # opens and closes, one at a time: a file is never open twice

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

    @contextlib.asynccontextmanager
    async def select(self, request: Request) -> AsyncIterator[tuple[str, LocalBackend]]:
        """The knowledge base a request names (`?db=` wins over `X-Evigraph-Db`), opened and kept
        open until the request is done with it."""
        raw = request.query_params.get(DB_QUERY) or request.headers.get(DB_HEADER) or None
        name = self.resolve(raw)
        served = await self._take(name)
        try:
            yield name, served.backend
        finally:
            served.requests -= 1
            if self._open.get(name) is served:
                self._open.move_to_end(name)  # used until now: the most recently used
            if len(self._open) > self.max_open:
                await self._trim()

    @contextlib.asynccontextmanager
    async def backend_for(self, request: Request | None) -> AsyncIterator[LocalBackend]:
        """`select` for MCP, whose clients read errors as text: a request that names no served
        knowledge base is refused with a `ToolError` whose hint lists the names to send."""
        async with contextlib.AsyncExitStack() as stack:
            try:
                if request is None:  # a transport without HTTP requests: only a lone knowledge base is chosen
                    raise ApiProblem(400, ApiError(error="no request to choose a knowledge base by", hint=CHOOSE))
                _, backend = await stack.enter_async_context(self.select(request))
            except ApiProblem as exc:
                names = ", ".join(exc.body.available or self.names()) or "none yet"
                raise ToolError(
                    exc.body.error,
                    hint=f"send the X-Evigraph-Db header (or ?db=NAME in the URL) naming one of: {names}",
                ) from None
            yield backend

    def tool_names(self) -> list[str]:
        """The tools every knowledge base served with these options offers, for the MCP server's
        guide, sent before a client has chosen one: the toolkit's own filter, less the tools that
        depend on the knowledge base (answer, on its LLM), which the guide cannot promise."""
        from evigraph.tools.definitions import Offer
        from evigraph.tools.registry import offered_tools

        c = self.toolkit
        offer = Offer(
            read_only=c.read_only,
            files_root=c.files_root is not None,
            traces=c.project is not None and c.agent is not None,
            allow_reject=c.allow_reject,
        )
        return [t.name for t in offered_tools(offer)]

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
        served = await self._take(name)
        served.requests -= 1
        return served.backend

    async def _take(self, name: str) -> _Served:
        """`name`'s knowledge base, opened, counted as in use by one more request."""
        served = self._open.get(name)
        if served is None:
            async with self._opening:
                served = self._open.get(name)
                if served is None:
                    await self._close_idle(self.max_open - 1)  # room first: memory stays within the bound
                    backend, listener = await self._open_one(name)
                    backend.sessions.remember(self._forgotten.pop(name, {}))
                    served = _Served(backend, listener)
                    self._open[name] = served
        served.requests += 1  # no await since it was found: a close cannot come between
        self._open.move_to_end(name)
        return served

    async def _trim(self) -> None:
        """Back within `max_open` once the requests that kept knowledge bases open are done; never
        the one just used, which would only be opened again by the next request naming it."""
        async with self._opening:
            await self._close_idle(self.max_open, spare=next(reversed(self._open), None))

    async def _close_idle(self, keep: int, spare: str | None = None) -> None:
        """Close the least recently used knowledge bases nobody is using until `keep` are open; one
        in use stays open (a request running on it must finish), and `_trim` closes it after."""
        while len(self._open) > keep:
            idle = next((n for n, s in self._open.items() if not s.busy and n != spare), None)
            if idle is None:
                return
            served = self._open.pop(idle)
            self._forgotten[idle] = served.backend.sessions.forget_all()
            log.info("closing knowledge base %s to keep at most %d open", idle, self.max_open)
            await _close(served)
            del served
            _give_back_memory()

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
        opened, self._open = self._open, OrderedDict()
        for served in opened.values():
            await _close(served)

    def _files(self) -> list[str]:
        assert self.folder is not None
        found = []
        with contextlib.suppress(OSError), os.scandir(self.folder) as entries:
            for entry in entries:
                stem = entry.name[: -len(DB_SUFFIX)]
                if entry.name.endswith(DB_SUFFIX) and valid_name(stem) and entry.is_file(follow_symlinks=False):
                    found.append(stem)
        return found


async def _close(served: _Served) -> None:
    """Stop serving other processes (letting a forwarded call finish), then close the knowledge base."""
    if served.listener is not None:
        await served.listener.close()
    await served.backend.toolkit.kb.close()


def _give_back_memory() -> None:
    """Return the memory a closed knowledge base freed to the system: measured on a 45 MB knowledge
    base, the process held 353 MB after closing it, 190 MB after the trim."""
    gc.collect()  # the backend's cycles (sessions, toolkit, indexes) before the trim
    give_back_memory()


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
