"""A real OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted answers.

The client under test runs unchanged (httpx, sockets, SSE parsing, retries); only the model is
scripted. Each POST is answered by the next queued `Reply`, else by `answer` (a function of the
request, so extraction tests can answer by what the prompt holds), else with a 400 that says
no reply was scripted. GET `.../models` lists `models`. Every request is recorded.

    with ReplayServer() as server:
        server.queue(rate_limited(1), chat_reply('{"ok": true}', prompt_tokens=30))
        llm = OpenAICompatibleLLM("test-model", base_url=server.url, api_key="sk-...")
        ...
        assert server.calls() == 2 and server.requests[0].header("authorization") == "Bearer sk-..."

Usable outside pytest (benchmarks): it needs the standard library only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

DEFAULT_MODEL = "test-model"


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    `body` is sent as JSON (str and bytes as they are); `events` turns the answer into an SSE
    stream, each event a JSON value or a raw string, then `data: [DONE]` unless `done` is False.
    `delay` holds the answer back (longer than a client's timeout tests timeouts); `disconnect`
    closes the connection without answering.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    events: Sequence[Any] | None = None
    event_delay: float = 0.0
    done: bool = True
    disconnect: bool = False


@dataclass(frozen=True)
class Request:
    """What the server received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    """Lower-case names."""
    body: Any
    """Parsed JSON, or None."""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def prompt(self) -> str:
        """Every message's content, joined: what an answer function matches on."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


Answer = Callable[[Request], Reply | None]


# -- replies ---------------------------------------------------------------------------------


def completion_body(
    content: str,
    *,
    prompt_tokens: int | None = 12,
    completion_tokens: int | None = 7,
    model: str = DEFAULT_MODEL,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-replay",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def chat_reply(content: str, **kwargs: Any) -> Reply:
    """A chat completion answering `content`; `prompt_tokens=None` leaves out the usage block."""
    delay = kwargs.pop("delay", 0.0)
    return Reply(body=completion_body(content, **kwargs), delay=delay)


def json_reply(value: Any, **kwargs: Any) -> Reply:
    """A chat completion whose content is `value` as JSON."""
    return chat_reply(json.dumps(value), **kwargs)


def stream_reply(
    deltas: Sequence[str],
    *,
    usage: tuple[int, int] | None = (12, 7),
    model: str = DEFAULT_MODEL,
    finish_reason: str = "stop",
    event_delay: float = 0.0,
    done: bool = True,
) -> Reply:
    """An SSE stream: a role chunk, one chunk per delta, a finish chunk, and a usage chunk (with
    empty choices, as OpenAI sends it for `stream_options.include_usage`) when `usage` is given."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-replay",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": d}) for d in deltas]
    events.append(chunk({}, finish_reason))
    if usage is not None:
        events.append(
            {
                "id": "chatcmpl-replay",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
            }
        )
    return Reply(events=events, event_delay=event_delay, done=done)


def error_reply(
    status: int, message: str, *, type: str = "invalid_request_error", code: str | None = None, **kwargs: Any
) -> Reply:
    """An OpenAI-style error body."""
    return Reply(status=status, body={"error": {"message": message, "type": type, "code": code}}, **kwargs)


def rate_limited(retry_after: float | str, message: str = "Rate limit reached, try again later") -> Reply:
    return error_reply(429, message, type="rate_limit_error", headers={"Retry-After": str(retry_after)})


# -- the server ------------------------------------------------------------------------------


class ReplayServer:
    """The server; `url` is its API root (`http://127.0.0.1:PORT/v1`)."""

    def __init__(self, *, models: Sequence[str] = (DEFAULT_MODEL,), answer: Answer | None = None) -> None:
        self.models = list(models)
        self.answer = answer
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was answering at one time."""
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def queue(self, *replies: Reply) -> None:
        """Answers for the next POSTs, in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Queued replies not sent yet."""
        with self._lock:
            return len(self._queue)

    def calls(self, path: str = "/chat/completions") -> int:
        """How many requests reached a path ending with `path`."""
        with self._lock:
            return sum(r.path.endswith(path) for r in self.requests)

    def chat_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        handler = type("Handler", (_Handler,), {"replay": self})  # one class per server: handlers find it
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes delayed answers, so no handler outlives the test by much
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- dispatch ----------------------------------------------------------------------------

    def _reply_for(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            queued = self._queue.pop(0) if request.method == "POST" and self._queue else None
        if queued is not None:
            return queued
        if self.answer is not None:
            answered = self.answer(request)
            if answered is not None:
                return answered
        if request.method == "GET" and request.path.endswith("/models"):
            return Reply(body={"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})
        return error_reply(400, f"replay server: no scripted reply for {request.method} {request.path}")

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _wait(self, seconds: float) -> bool:
        """Sleeps; False when the server is stopping meanwhile."""
        return not (seconds > 0 and self._stopping.wait(seconds))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: the client reuses connections
    replay: ReplayServer

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        replay = self.replay
        replay._enter()
        self.left = False
        try:
            reply = replay._reply_for(request)
            if not replay._wait(reply.delay) or reply.disconnect:
                self.close_connection = True
                return
            if reply.events is not None:
                self._send_events(reply)
            else:
                self._send_body(reply)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): fine
            self.close_connection = True
        finally:
            if not self.left:
                replay._leave()

    def _send_body(self, reply: Reply) -> None:
        body = reply.body
        if isinstance(body, bytes):
            data, kind = body, "application/octet-stream"
        elif isinstance(body, str):
            data, kind = body.encode(), "text/plain; charset=utf-8"
        else:
            data, kind = (b"" if body is None else json.dumps(body).encode()), "application/json"
        self.send_response(reply.status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, reply: Reply) -> None:
        """SSE over a connection closed at the end, as many servers stream."""
        self.close_connection = True
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        events = [e if isinstance(e, str) else json.dumps(e) for e in reply.events or ()]
        if reply.done:
            events.append("[DONE]")
        for i, event in enumerate(events):
            if i and not self.replay._wait(reply.event_delay):
                return
            if i == len(events) - 1:
                # Done answering before the last event goes out: the client ends the stream on it
                # and may send its next request before this thread runs again, which counted two
                # requests in flight for one at a time (seen once in a CI run on a loaded machine).
                self.left = True
                self.replay._leave()
            self.wfile.write(f"data: {event}\n\n".encode())
            self.wfile.flush()
