"""One database, many `evigraph mcp` processes: the first serves, later ones forward to it.

The embedded database has one writer, and an IDE starts one stdio server per window. The process
that opens the database listens on a local Unix socket, named in a small file next to the
database; a later process that finds the database locked connects there and forwards every tool
call, so all windows share one database and see each other's writes. If the serving process goes
away, a forwarder takes over the database itself.

A forwarder must not get more than its own options allow: told them (`options=`), it serves only
the read tools when it is read-only, and refuses to start when the serving process has another
document scope or files root. Nor may it silently get less: a forwarder asked to write refuses to
start when the serving process is read-only, and says so on each write call when a read-only
process took the database over later.

A CLI ingest serves the database it holds the same way, read tools only (`evigraph.cli.serving`),
so `evigraph status` and `search` are answered while it runs, and `evigraph mcp` can start.

Wire format: one JSON object per line. Requests are `{"op": "specs"}`,
`{"op": "call", "client": ..., "tool": ..., "args": ...}` or `{"op": "read", "method": ..., "args": ...}`;
replies are the specs (with the serving process's options and role), a `Reply`, or for a read
`{"result": ...}` / `{"error": {"type", "message", "hint"}}` (see `HeldReads`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evigraph import errors
from evigraph.errors import ConfigurationError, DatabaseLockedError, EvigraphError
from evigraph.kb.core import Status
from evigraph.limits import DEFAULT_LIMITS, Limits
from evigraph.models import StoredDocument
from evigraph.retrieval.query import RetrieveInput
from evigraph.retrieval.result import RetrievalResult
from evigraph.tools.definitions import ToolSpec

if TYPE_CHECKING:  # the backend brings the toolkit and every tool's input model: `evigraph search` needs none
    from evigraph.retrieval.schema import CypherRows
    from evigraph.serving.backend import LocalBackend, Reply

log = logging.getLogger("evigraph.mcp")

_LIMIT = 64 * 1024 * 1024  # one line may carry a large ingest text
CONNECT_WAIT_S = 10.0  # how long a starting or orphaned forwarder waits for the database or a server


def pointer_path(db: Path) -> Path:
    """The file next to the database that names the serving process's socket."""
    return db.with_name(db.name + ".mcp.json")


def read_pointer(db: Path) -> str | None:
    """The socket named in the pointer file next to `db`, if there is one."""
    try:
        socket = json.loads(pointer_path(db).read_text())["socket"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return socket if isinstance(socket, str) else None


def forward_options(
    read_only: bool,
    files_root: str | os.PathLike[str] | None,
    scope: Any,
    project: str | None = None,
    agent: str | None = None,
    allow_reject: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    """The options a forwarder compares with the serving process's (see `RemoteBackend.connect`)."""
    root = str(Path(files_root).resolve()) if files_root is not None else None
    return {
        "read_only": bool(read_only),
        "files_root": root,
        "scope": sorted(scope or ()),
        "project": project,
        "agent": agent,
        "allow_reject": allow_reject,
        "limits": limits.model_dump(),
    }


def backend_options(backend: LocalBackend) -> dict[str, Any]:
    toolkit = backend.toolkit
    root = toolkit.files_root.root if toolkit.files_root is not None else None
    traces = toolkit.traces
    project, agent = (traces.project, traces.agent) if traces is not None else (None, None)
    reject = toolkit.shared.allow_reject
    return forward_options(toolkit.read_only, root, toolkit.kb.scope, project, agent, reject, toolkit.limits)


def socket_path(db: Path, pid: int | None = None) -> Path:
    # Unix socket paths are limited to ~100 bytes, so the socket lives in the temp folder.
    digest = hashlib.sha1(str(db.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"evigraph-{digest}-{os.getpid() if pid is None else pid}.sock"


def remove_dead_sockets(db: Path) -> list[Path]:
    """The sockets earlier processes left for this database, removed when their process is gone.

    A server killed outright (SIGKILL, or an agent client that ends a session that way) never
    runs `close`, and its socket stayed in the temp folder for good: a test run left about 27.
    A socket whose process still exists, or whose number another process now has, is left.
    """
    stem = socket_path(db, 0).name.removesuffix("0.sock")
    removed: list[Path] = []
    for path in Path(tempfile.gettempdir()).glob(f"{stem}*.sock"):
        pid = path.name.removeprefix(stem).removesuffix(".sock")
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
        except PermissionError:  # another user's live process
            continue
    return removed


class ForwardingListener:
    """Serves this process's backend to forwarding processes over a Unix socket.

    `role` is what holds the database here: "mcp", or "ingest" for a CLI ingest, which serves the
    read tools only and goes away when the ingest ends; `turn`, when given, is held around each
    call served, for a process whose own work must not overlap them (the ingest's writes).
    """

    def __init__(
        self,
        db: Path,
        backend: LocalBackend,
        role: str = "mcp",
        turn: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self.db = db
        self.backend = backend
        self.role = role
        self._turn = turn
        self.socket = socket_path(db)
        self._server: asyncio.AbstractServer | None = None
        self._connections = 0
        self._open: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}

    async def start(self) -> None:
        remove_dead_sockets(self.db)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket), limit=_LIMIT)
        os.chmod(self.socket, 0o600)
        pointer = pointer_path(self.db)
        tmp = pointer.with_name(pointer.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "socket": str(self.socket)}))
        os.replace(tmp, pointer)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        # Hang up on the forwarders (they take over), letting a call in flight finish first.
        for writer in self._open.values():
            writer.close()
        if self._open:
            _, pending = await asyncio.wait(list(self._open), timeout=CONNECT_WAIT_S)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        pointer = pointer_path(self.db)
        with contextlib.suppress(OSError, ValueError):
            if json.loads(pointer.read_text()).get("pid") == os.getpid():
                pointer.unlink()
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()

    async def _answer(self, prefix: str, request: dict[str, Any]) -> Any:
        if request.get("op") == "read":
            return await _answer_read(self.backend, request.get("method"), request.get("args") or {})
        reply = await self.backend.call(prefix + request.get("client", ""), request["tool"], request.get("args"))
        return reply.to_wire()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        prefix = f"fwd{self._connections}:"
        task = asyncio.current_task()
        if task is not None:
            self._open[task] = writer
        try:
            while line := await reader.readline():
                request = json.loads(line)
                if request.get("op") == "specs":
                    answer: Any = {
                        "specs": [s.model_dump() for s in self.backend.specs()],
                        "options": backend_options(self.backend),
                        "pid": os.getpid(),
                        "role": self.role,
                    }
                else:
                    async with self._turn() if self._turn is not None else contextlib.nullcontext():
                        answer = await self._answer(prefix, request)
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, json.JSONDecodeError, KeyError) as exc:
            log.warning("forwarding connection closed: %s", exc)
        except asyncio.CancelledError:  # shutting down; a cancelled handler would be logged as a crash
            log.info("forwarding connection closed at shutdown")
        finally:
            if task is not None:
                self._open.pop(task, None)
            writer.close()


class RemoteBackend:
    """Sends tool calls to the process serving the database; takes over if that process is gone."""

    def __init__(
        self,
        socket: str,
        specs: list[ToolSpec],
        take_over: Callable[[], Awaitable[LocalBackend]],
        db: Path | None = None,
        read_only: bool = False,
    ) -> None:
        self.socket = socket
        self.db = db
        self.read_only = read_only
        self._specs = specs
        self._take_over = take_over
        self.served_pid: int | None = None
        self._served_read_only = False  # the serving process took the database over read-only
        self._local: LocalBackend | None = None
        self._lock = asyncio.Lock()
        self._recovering = asyncio.Lock()
        self._stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    @classmethod
    async def connect(
        cls,
        db: Path,
        take_over: Callable[[], Awaitable[LocalBackend]],
        options: dict[str, Any] | None = None,
    ) -> RemoteBackend:
        """Forward to the process serving `db`; `options` (from `forward_options`) are this process's own."""
        # The serving process writes its pointer just after opening the database, so a process
        # started at the same moment (two IDE windows) may find the lock before the pointer.
        deadline = asyncio.get_running_loop().time() + CONNECT_WAIT_S
        while True:
            socket = read_pointer(db)
            if socket is not None:
                backend = cls(socket, [], take_over, db, read_only=bool(options and options["read_only"]))
                try:
                    raw = await backend._request({"op": "specs"})
                    specs = [ToolSpec.model_validate(s) for s in raw["specs"]]
                except (OSError, ConnectionError, json.JSONDecodeError, KeyError):
                    pass  # a pointer left by a process that is gone
                else:
                    backend.served_pid = raw.get("pid")
                    if options is not None:
                        try:
                            if raw.get("role") == "ingest" and not options["read_only"]:
                                raise ConfigurationError(
                                    f"{db} is being ingested by evigraph process {backend.served_pid}, which "
                                    "serves the read tools only while it runs",
                                    hint="start evigraph mcp without --allow-writes and --files-root to read "
                                    "meanwhile, or start it again once the ingest has ended",
                                )
                            _check_options(db, options, raw.get("options") or {}, backend.served_pid)
                        except ConfigurationError:
                            await backend.close()
                            raise
                    backend._specs = [s for s in specs if s.annotations.read_only or not backend.read_only]
                    return backend
            if asyncio.get_running_loop().time() >= deadline:
                raise ConfigurationError(
                    f"{db} is locked by another process that does not serve MCP (an ingest, a search, or a "
                    "read-only evigraph process when this one asks to write)",
                    hint="wait for that process to finish, then start evigraph mcp again",
                )
            await asyncio.sleep(0.2)

    def specs(self) -> list[ToolSpec]:
        return self._specs

    async def close(self) -> None:
        """Hang up, and close the database if this process took it over."""
        if self._stream is not None:
            self._stream[1].close()
            self._stream = None
        if self._local is not None:
            await self._local.toolkit.kb.close()

    async def call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply:
        from evigraph.serving.backend import Reply

        if self._local is not None:
            return await self._local.call(client, name, args)
        if self.read_only and name not in {s.name for s in self._specs}:
            return Reply(
                text=f"{name} is not offered by this read-only server (use the read tools)", error=True, failure="tool"
            )
        if refused := self._refused(name):
            return refused
        request = {"op": "call", "client": client, "tool": name, "args": args}
        socket = self.socket
        try:
            raw = await self._request(request)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, json.JSONDecodeError):
            log.warning("the serving process is gone; taking over the database")
            if await self._recover(socket):
                return await self.call(client, name, args)
            if refused := self._refused(name):  # the process that took over may be read-only
                return refused
            raw = await self._request(request)
        return Reply.from_wire(raw)

    def _refused(self, name: str) -> Reply | None:
        from evigraph.serving.backend import Reply

        if self._served_read_only and name in {s.name for s in self._specs if not s.annotations.read_only}:
            return Reply(text=_held_read_only(self.db, self.served_pid, after_start=True), error=True, failure="tool")
        return None

    async def _recover(self, failed: str) -> bool:
        """Open the database here (True), or find the process that took it over first (False).

        The serving process closes its socket before it releases the database, and other
        forwarders race for it too, so a locked database is retried for a few seconds.
        """
        async with self._recovering:
            if self._local is not None:  # a concurrent call took over already
                return True
            if self.socket != failed:  # or found the process that did
                return False
            return await self._recover_once()

    async def _recover_once(self) -> bool:
        deadline = asyncio.get_running_loop().time() + CONNECT_WAIT_S
        while True:
            try:
                self._local = await self._take_over()
                return True
            except DatabaseLockedError:
                socket = read_pointer(self.db) if self.db is not None else None
                if socket is not None and socket != self.socket:
                    log.warning("another evigraph process took the database over; forwarding to it")
                    self.socket = socket
                    await self._learn_served()
                    return False
                if asyncio.get_running_loop().time() >= deadline:
                    raise
                await asyncio.sleep(0.2)

    async def _learn_served(self) -> None:
        """Who serves the database now: a writable forwarder must not take a read-only server for itself."""
        try:
            raw = await self._request({"op": "specs"})
        except (OSError, ConnectionError, json.JSONDecodeError):
            return  # gone as well: the next call recovers again
        self.served_pid = raw.get("pid")
        self._served_read_only = bool((raw.get("options") or {}).get("read_only")) and not self.read_only
        if self._served_read_only:
            log.error("%s", _held_read_only(self.db, self.served_pid, after_start=True))

    async def _request(self, payload: dict[str, Any]) -> Any:
        async with self._lock:
            if self._stream is None:
                self._stream = await asyncio.open_unix_connection(self.socket, limit=_LIMIT)
            reader, writer = self._stream
            try:
                writer.write(json.dumps(payload).encode() + b"\n")
                await writer.drain()
                line = await reader.readline()
                if not line:
                    raise ConnectionError("the serving process closed the connection")
                return json.loads(line)
            except BaseException:
                self._stream = None
                writer.close()
                raise


def _check_options(db: Path, own: dict[str, Any], served: dict[str, Any], pid: int | None = None) -> None:
    """Refuse to forward where the serving process would show this one more, or less, than its options say."""
    if not own.get("read_only") and served.get("read_only"):
        raise ConfigurationError(_held_read_only(db, pid, after_start=False), hint=_HELD_READ_ONLY_HINT)
    # A read-only forwarder gets no tool that reads the files root, so only a writer must match it.
    # The task tools act on the serving process's project as its agent: both must match, read-only or not.
    keys = [
        ("scope", "document scope (EVIGRAPH_MCP_SCOPE)"),
        ("project", "project (--project, EVIGRAPH_MCP_PROJECT)"),
        ("agent", "agent (--agent, EVIGRAPH_MCP_AGENT)"),
        ("allow_reject", "reject_decision setting (EVIGRAPH_MCP_ALLOW_REJECT)"),
    ]
    if not own.get("read_only"):
        keys.append(("files_root", "files root"))
    # The serving process bounds and times the calls: another limit there would be another server.
    mine, theirs = own.get("limits") or {}, served.get("limits") or {}
    if differ := [f"{k} {theirs.get(k)} there, {v} here" for k, v in mine.items() if theirs.get(k) != v]:
        raise ConfigurationError(
            f"{db} is served by another evigraph process with other limits: {'; '.join(differ)}",
            hint="start evigraph mcp with the same limits as the other window, or stop that one",
        )
    for key, what in keys:
        if own.get(key) != served.get(key):
            raise ConfigurationError(
                f"{db} is served by another evigraph process with another {what}: "
                f"{served.get(key) or 'none'} there, {own.get(key) or 'none'} here",
                hint="start evigraph mcp with the same options as the other window, or stop that one",
            )


_HELD_READ_ONLY_HINT = (
    "stop that process, or restart it with --allow-writes so this one forwards its writes to it; "
    "or start this one without --allow-writes and --files-root to share the database read-only"
)


def _held_read_only(db: Path | None, pid: int | None, *, after_start: bool) -> str:
    who = f"evigraph process {pid}" if pid is not None else "another evigraph process"
    where = f" (named in {pointer_path(db)})" if db is not None else ""
    if after_start:
        return (
            f"the database is now held read-only by {who}{where}, which took it over when the serving process "
            f"exited: this server's write tools cannot run until that process exits ({_HELD_READ_ONLY_HINT})"
        )
    return f"{db} is held read-only by {who}{where}, so this server, asked to write, cannot"


# -- reads for the command line ------------------------------------------------------------------

READ_METHODS = ("status", "documents", "retrieve", "cypher_query")
"""What `evigraph status`, `search` and `cypher` ask of the process holding the database: the knowledge
base's own results, not the tools' agent-shaped ones, so the command prints exactly what it
prints when it opens the database itself."""


async def _answer_read(backend: LocalBackend, method: object, args: dict[str, Any]) -> dict[str, Any]:
    kb = backend.toolkit.kb
    try:
        if method == "status":
            return {"result": (await kb.status()).model_dump(mode="json")}
        if method == "documents":
            found = await kb.documents(limit=int(args.get("limit", 100)), offset=int(args.get("offset", 0)))
            return {"result": [d.model_dump(mode="json") for d in found]}
        if method == "retrieve":
            result = await kb.retrieve(RetrieveInput.model_validate(args))
            return {"result": result.model_dump(mode="json")}
        if method == "cypher_query":  # checked as the tool checks it: a holder answers any client on its socket
            from evigraph.strict import build
            from evigraph.tools.inputs import CypherInput

            given = build(CypherInput, args, hint="send query, params (an object) and limit (1-1000)")
            rows = await kb.cypher_query(given.query, given.params, limit=given.limit)
            return {"result": rows.model_dump(mode="json")}
        error: dict[str, str] = {
            "type": "ConfigurationError",
            "message": f"unknown read {method!r}",
            "hint": f"use one of {', '.join(READ_METHODS)}",
        }
    except EvigraphError as exc:
        error = {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}
    except Exception as exc:  # the caller gets a one-line error; this process keeps serving
        log.exception("read %s failed", method)
        error = {"type": "StoreError", "message": f"{method} failed: {type(exc).__name__}: {exc}", "hint": ""}
    return {"error": error}


class HeldReads:
    """`status`, `documents` and `retrieve` answered by the evigraph process that holds the database.

    The embedded engine lets one process write, and refuses read-only opens by others meanwhile
    (it locks the file), so a command that only reads asks the holder instead.
    """

    def __init__(self, socket: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.socket = socket
        self.pid: int | None = None  # the process answering, said on stderr by the command
        self._reader = reader
        self._writer = writer

    @classmethod
    async def connect(cls, db: Path) -> HeldReads | None:
        """Connect to the process named in `db`'s pointer file; None when none answers there.

        A server scoped to some documents would answer for those only, so it is refused rather
        than passed off as the whole knowledge base.
        """
        socket = read_pointer(db)
        if socket is None:
            return None
        try:
            reader, writer = await asyncio.open_unix_connection(socket, limit=_LIMIT)
        except OSError:
            return None  # a pointer left by a process that is gone, or one just ending
        held = cls(socket, reader, writer)
        try:
            served = await held._exchange({"op": "specs"})
        except (EvigraphError, json.JSONDecodeError):
            await held.close()
            return None
        held.pid = served.get("pid")
        scope = (served.get("options") or {}).get("scope")
        if scope:
            await held.close()
            raise ConfigurationError(
                f"{db} is held by evigraph process {served.get('pid')}, which serves only the documents "
                f"{', '.join(map(str, scope))} (EVIGRAPH_MCP_SCOPE)",
                hint="stop that process to read the whole knowledge base here, or ask it through MCP",
            )
        return held

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()

    async def status(self) -> Status:
        return Status.model_validate(await self._read("status", {}))

    async def documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]:
        rows = await self._read("documents", {"limit": limit, "offset": offset})
        return [StoredDocument.model_validate(r) for r in rows]

    async def retrieve(self, query: RetrieveInput) -> RetrievalResult:
        args = query.model_dump(mode="json", exclude_unset=True)
        return RetrievalResult.model_validate(await self._read("retrieve", args))

    async def cypher_query(self, query: str, params: dict[str, Any] | None = None, *, limit: int = 100) -> CypherRows:
        from evigraph.retrieval.schema import CypherRows  # with the store's modules: not on `search`'s cold path

        args = {"query": query, "params": params or {}, "limit": limit}
        return CypherRows.model_validate(await self._read("cypher_query", args))

    async def _read(self, method: str, args: dict[str, Any]) -> Any:
        raw = await self._exchange({"op": "read", "method": method, "args": args})
        if "error" in raw:
            error = raw["error"]
            kind = getattr(errors, str(error.get("type")), None)
            if not (isinstance(kind, type) and issubclass(kind, EvigraphError)):
                kind = EvigraphError
            raise kind(str(error.get("message")), hint=str(error.get("hint") or ""))
        return raw["result"]

    async def _exchange(self, payload: dict[str, Any]) -> Any:
        try:
            self._writer.write(json.dumps(payload).encode() + b"\n")
            await self._writer.drain()
            line = await self._reader.readline()
        except (OSError, ConnectionError) as exc:
            raise _gone() from exc
        if not line:
            raise _gone()
        return json.loads(line)


def _gone() -> EvigraphError:
    return errors.StoreError(
        "the evigraph process holding the database stopped while answering",
        hint="run the command again: it opens the database itself once that process has ended",
    )
