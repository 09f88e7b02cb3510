"""One database, many `evigraph mcp` processes: the first serves, later ones forward to it.

The embedded database has one writer, and an IDE starts one stdio server per window. The process
that opens the database listens on a local Unix socket, named in a small file next to the
database; a later process that finds the database locked connects there and forwards every tool
call, so all windows share one database and see each other's writes. If the serving process goes
away, a forwarder takes over the database itself.

Wire format: one JSON object per line. Requests are `{"op": "specs"}` or
`{"op": "call", "client": ..., "tool": ..., "args": ...}`; replies are the specs or a `Reply`.
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
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.mcp.backend import LocalBackend, Reply
from evigraph.tools.registry import ToolSpec

log = logging.getLogger("evigraph.mcp")

_LIMIT = 64 * 1024 * 1024  # one line may carry a large ingest text


def pointer_path(db: Path) -> Path:
    """The file next to the database that names the serving process's socket."""
    return db.with_name(db.name + ".mcp.json")


def _socket_path(db: Path) -> Path:
    # Unix socket paths are limited to ~100 bytes, so the socket lives in the temp folder.
    digest = hashlib.sha1(str(db.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"evigraph-{digest}-{os.getpid()}.sock"


class ForwardingListener:
    """Serves this process's backend to forwarding processes over a Unix socket."""

    def __init__(self, db: Path, backend: LocalBackend) -> None:
        self.db = db
        self.backend = backend
        self.socket = _socket_path(db)
        self._server: asyncio.AbstractServer | None = None
        self._connections = 0

    async def start(self) -> None:
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
        pointer = pointer_path(self.db)
        with contextlib.suppress(OSError, ValueError):
            if json.loads(pointer.read_text()).get("pid") == os.getpid():
                pointer.unlink()
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        prefix = f"fwd{self._connections}:"
        try:
            while line := await reader.readline():
                request = json.loads(line)
                if request.get("op") == "specs":
                    answer: Any = {"specs": [s.model_dump() for s in self.backend.specs()]}
                else:
                    reply = await self.backend.call(
                        prefix + request.get("client", ""), request["tool"], request.get("args")
                    )
                    answer = reply.to_wire()
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, json.JSONDecodeError, KeyError) as exc:
            log.warning("forwarding connection closed: %s", exc)
        finally:
            writer.close()


class RemoteBackend:
    """Sends tool calls to the process serving the database; takes over if that process is gone."""

    def __init__(self, socket: str, specs: list[ToolSpec], take_over: Callable[[], Awaitable[LocalBackend]]) -> None:
        self.socket = socket
        self._specs = specs
        self._take_over = take_over
        self._local: LocalBackend | None = None
        self._lock = asyncio.Lock()
        self._stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    @classmethod
    async def connect(cls, db: Path, take_over: Callable[[], Awaitable[LocalBackend]]) -> RemoteBackend:
        pointer = pointer_path(db)
        try:
            socket = json.loads(pointer.read_text())["socket"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigurationError(
                f"{db} is locked by another process that does not serve MCP",
                hint="wait for that process (an ingest?) to finish, then start evigraph mcp again",
            ) from exc
        backend = cls(socket, [], take_over)
        raw = await backend._request({"op": "specs"})
        backend._specs = [ToolSpec.model_validate(s) for s in raw["specs"]]
        return backend

    def specs(self) -> list[ToolSpec]:
        return self._specs

    async def call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply:
        if self._local is not None:
            return await self._local.call(client, name, args)
        try:
            raw = await self._request({"op": "call", "client": client, "tool": name, "args": args})
        except (OSError, ConnectionError, asyncio.IncompleteReadError, json.JSONDecodeError):
            log.warning("the serving process is gone; taking over the database")
            self._local = await self._take_over()
            return await self._local.call(client, name, args)
        return Reply.from_wire(raw)

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
