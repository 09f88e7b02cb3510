"""MCP over stdio, spoken directly: newline-delimited JSON-RPC on stdin and stdout.

An agent starts one `evigraph mcp` per session and waits for its first answer, so this path is
the product's cold start. Importing the SDK (`import mcp` loads its client, its server and the
pydantic models of two protocol eras) took 0.47-0.53 s, 5-6x a whole `evigraph --version`
process, for a server that offers tools and nothing else: initialize, ping, tools/list and
tools/call. Those four are answered here; HTTP and SSE, whose session handling the SDK does
well, still go through it (`evigraph.mcp.server`, which also builds the wire forms used here).

What it answers matches the SDK's stdio server, which the tests drive through the SDK's own
client: `server/discover` (the stateless 2026 era) is refused as an unknown method, so a client
in `auto` mode falls back to the initialize handshake; other unknown methods get -32601; a line
that is not JSON is logged and skipped; a request cancelled by `notifications/cancelled` gets no
reply, as the protocol asks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from typing import Any, BinaryIO

from evigraph.mcp.server import SERVER_NAME, Backend, call_result, server_instructions, tool_listing
from evigraph.version import __version__

log = logging.getLogger("evigraph.mcp")

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The handshake-era revisions; a client asking for another is offered the newest, as the SDK does.
A test holds this to the installed SDK's `HANDSHAKE_PROTOCOL_VERSIONS`."""

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RequestError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class StdioServer:
    """One client's session over a pair of byte streams (stdin and stdout unless given)."""

    def __init__(self, backend: Backend, reader: BinaryIO | None = None, writer: BinaryIO | None = None) -> None:
        self.backend = backend
        self.reader = reader or sys.stdin.buffer
        self.writer = writer or sys.stdout.buffer
        self.specs = backend.specs()
        self.tools = [tool_listing(s) for s in self.specs]
        self.running: dict[Any, asyncio.Task[None]] = {}

    async def serve(self) -> None:
        """Until stdin closes; calls still running then finish and are answered (`echo REQUEST |
        evigraph mcp` gets its reply), each bounded by the toolkit's own time limits."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()

        def read() -> None:  # a thread: reading a pipe without blocking the loop works on every platform
            try:
                for line in iter(self.reader.readline, b""):
                    loop.call_soon_threadsafe(lines.put_nowait, line)
            except (OSError, ValueError) as exc:
                log.warning("stdin closed with an error: %s", exc)
            finally:
                loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read, name="evigraph-mcp-stdin", daemon=True).start()
        try:
            while (line := await lines.get()) is not None:
                self.receive(line)
        finally:
            await asyncio.gather(*self.running.values(), return_exceptions=True)

    def receive(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError as exc:
            log.warning("skipped a line that is not JSON-RPC (%s): %.200r", exc, line)
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return  # a response (this server sends no requests) or a batch, which MCP does not use
        method, params = message["method"], message.get("params")
        if "id" not in message:
            self.notified(method, params)
            return
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            error = {"code": INVALID_REQUEST, "message": "a request id is a string or an integer"}
            self.send({"jsonrpc": "2.0", "id": None, "error": error})  # a list or object id cannot be echoed back
            return
        if request_id in self.running:
            error = {"code": INVALID_REQUEST, "message": f"request id {request_id!r} is already in use"}
            self.send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        task = asyncio.create_task(self.answer(request_id, method, params))
        self.running[request_id] = task
        task.add_done_callback(lambda _: self.running.pop(request_id, None))

    def notified(self, method: str, params: Any) -> None:
        cancelled = params.get("requestId") if isinstance(params, dict) else None
        if method == "notifications/cancelled" and (task := self.running.get(cancelled)):
            task.cancel()

    async def answer(self, request_id: Any, method: str, params: Any) -> None:
        try:
            result = await self.handle(method, params if isinstance(params, dict) else {})
        except asyncio.CancelledError:
            return
        except RequestError as exc:
            error = {"code": exc.code, "message": exc.message}
            self.send({"jsonrpc": "2.0", "id": request_id, "error": error | ({"data": exc.data} if exc.data else {})})
            return
        except Exception as exc:  # a bug: the client gets an error, not a silent hang
            log.exception("MCP request %s failed", method)
            self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": str(exc)}})
            return
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def handle(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": SERVER_NAME, "version": __version__},
                "instructions": server_instructions(self.specs),
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools}
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
                raise RequestError(INVALID_PARAMS, "tools/call takes a tool name and an object of arguments")
            return call_result(await self.backend.call("", name, arguments))
        raise RequestError(METHOD_NOT_FOUND, "Method not found", method)

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.writer.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
            self.writer.flush()
        except (BrokenPipeError, ValueError):  # the client closed its end: nobody is left to answer
            log.debug("dropped a reply to a client that has gone: %.200s", message)


async def serve_stdio(backend: Backend) -> None:
    await StdioServer(backend).serve()
