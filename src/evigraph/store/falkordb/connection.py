"""`Connection`: one knowledge base (a graph) on a FalkorDB server, reads spread over replicas.

Every write goes to the primary as one `GRAPH.QUERY`, which the server runs alone (one writer
per graph at a time), so a write the store keeps to one query is atomic whatever other clients
do. Reads go through `GRAPH.RO_QUERY`, which the server itself refuses to let write, to the
replicas in turn when the location names some; a replica that fails is left out for a while and
the read is answered by the next one or by the primary. The client is synchronous (redis-py), so
calls run in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.errors import ConfigurationError, StoreError, StoreUnavailableError
from evigraph.store.base import opened
from evigraph.store.falkordb.local_servers import LocalServerAccess, is_loopback, local_access
from evigraph.store.location import StoreLocation

REPLICA_RETRY_S = 10.0
"""How long a replica that failed is left out before it is tried again."""

Row = dict[str, Any]
_NOT_READY = ("LOADING", "MASTERDOWN", "Invalid graph operation on empty key")
"""Replies of a replica still loading, cut from its primary, or not yet holding a graph the
primary has (replication is asynchronous): the read goes elsewhere, at last to the primary."""


class Connection:
    def __init__(self, location: StoreLocation, *, read_only: bool) -> None:
        self.location = location
        self.read_only = read_only
        self._primary: Any = None
        self._db: Any = None
        self._replicas: list[tuple[str, Any | None]] = []  # (host:port, graph once connected)
        self._client: Any = None
        self._down: dict[str, float] = {}
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._local: dict[str, LocalServerAccess | None] = {}  # host:port -> the local server found there

    @property
    def graph_name(self) -> str:
        assert self.location.graph is not None
        return self.location.graph

    def open(self) -> None:
        """Connect to the primary, check it runs FalkorDB, and connect to the replicas that answer;
        one that does not is left out for a while and tried again later."""
        client = _client_module()
        host, port = self.location.host or "localhost", self.location.port or 6379
        try:
            self._primary = self._graph(client, host, port)
        except StoreError:
            raise
        except Exception as exc:
            raise server_error(
                exc, f"{host}:{port}", given=self.location.password is not None, local=self._local.get(f"{host}:{port}")
            ) from exc
        self._db = self._primary.client
        for r_host, r_port in self.location.replicas:
            self._replicas.append((f"{r_host}:{r_port}", None))
        self._client = client

    def _password(self, host: str, port: int) -> str | None:
        """The URL's password, else that of this user's local server on the port (`local_servers`)."""
        password = self.location.password
        if password is None and self.location.username is None:
            where = f"{host}:{port}"
            if where not in self._local:
                self._local[where] = local_access(host, port)
            found = self._local[where]
            password = found.password if found is not None else None
        return password

    def _graph(self, client: Any, host: str, port: int) -> Any:
        db = client.FalkorDB(**self._client_options(host, port))
        modules = db.connection.execute_command("MODULE", "LIST")
        if "graph" not in {_module_name(m) for m in modules}:
            raise StoreError(
                f"the server at {host}:{port} runs no FalkorDB module",
                hint="start FalkorDB (evigraph server start, or docker run falkordb/falkordb), not a plain Redis",
            )
        return db.select_graph(self.graph_name)

    def _replica(self, index: int) -> Any | None:
        """The replica's graph, connecting on first use; None while it cannot be reached."""
        name, graph = self._replicas[index]
        if graph is not None:
            return graph
        host, _, port = name.rpartition(":")
        try:
            graph = self._graph(self._client, host, int(port))
        except Exception:
            with self._lock:
                self._down[name] = time.monotonic()
            return None
        with self._lock:
            self._replicas[index] = (name, graph)
        return graph

    def close(self) -> None:
        for graph in [self._primary, *(g for _, g in self._replicas if g is not None)]:
            if graph is not None:
                with contextlib.suppress(Exception):  # closing a connection that already failed is fine
                    graph.client.connection.close()
        self._primary, self._replicas = None, []

    def graphs(self) -> list[str]:
        """The graphs on the primary server (`GRAPH.LIST`)."""
        return [_text(g) for g in self._db.execute_command("GRAPH.LIST")]

    def knowledge_bases(self) -> list[str]:
        """The graphs on the primary that carry evigraph's mark, by name."""
        out = []
        for name in sorted(self.graphs()):
            rows = self._db.select_graph(name).ro_query("MATCH (m:EvigraphMeta {key: 'app'}) RETURN m.value").result_set
            if rows and rows[0][0] == "evigraph":
                out.append(name)
        return out

    def command(self, *args: Any) -> Any:
        """A plain server command on the primary (the generation counter, locks)."""
        try:
            return self._db.execute_command(*args)
        except Exception as exc:
            if _is_connection(exc):
                raise _Unreachable(str(exc), self._primary_name) from exc
            raise

    def dedicated_client(self) -> Any:
        """A client of the primary with one connection of its own, which its holder alone uses: a
        writer's lease (`leases.py`) is live while that connection is open."""
        import redis

        host, port = self.location.host or "localhost", self.location.port or 6379
        return redis.Redis(**self._client_options(host, port), single_connection_client=True)

    def _client_options(self, host: str, port: int) -> dict[str, Any]:
        """How every client of this store reaches a server: the graph's and a writer's lease alike.

        One retry, on a dropped connection only (a server restarted under an idle client). redis-py
        8's default retries a timed-out command 10 times with backoff: a server that stopped
        answering held each query 11 minutes instead of 60 s, and a slow write was sent again.
        """
        from redis.backoff import NoBackoff
        from redis.exceptions import ConnectionError as DroppedConnection
        from redis.retry import Retry

        return {
            "host": host,
            "port": port,
            "username": self.location.username,
            "password": self._password(host, port),
            "socket_timeout": 60,
            "socket_connect_timeout": 5,
            "retry": Retry(NoBackoff(), 1, supported_errors=(DroppedConnection,)),
        }

    # -- queries -----------------------------------------------------------------------------

    def write_sync(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        if self.read_only:
            raise read_only_error()
        return self._run(self.primary, query, params, read=False, where=self._primary_name)

    def read_sync(
        self, query: str, params: Mapping[str, Any] | None = None, timeout_ms: int | None = None
    ) -> list[Row]:
        for name, graph in self._read_order():
            try:
                return self._run(graph, query, params, read=True, where=name, timeout_ms=timeout_ms)
            except _Unreachable:
                if graph is self._primary:
                    raise
                with self._lock:
                    self._down[name] = time.monotonic()
        raise AssertionError("the primary is always last in the read order")

    def read_primary_sync(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """A read-only query on the primary: for a writer that must see its own and others' latest
        writes, which a replica may not have yet."""
        return self._run(self.primary, query, params, read=True, where=self._primary_name)

    async def write(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        return await asyncio.to_thread(self.write_sync, query, params)

    async def read(
        self, query: str, params: Mapping[str, Any] | None = None, timeout_ms: int | None = None
    ) -> list[Row]:
        return await asyncio.to_thread(self.read_sync, query, params, timeout_ms)

    def write_many(self, query: str, rows: Sequence[Any], batch: int = 2000, **extra: Any) -> None:
        """`UNWIND $rows AS r ...` in batches: a query's parameters travel inside its text."""
        for start in range(0, len(rows), batch):
            self.write_sync(query, {"rows": list(rows[start : start + batch]), **extra})

    @property
    def primary(self) -> Any:
        return opened(self._primary)

    @property
    def _primary_name(self) -> str:
        return f"{self.location.host}:{self.location.port}"

    def _read_order(self) -> list[tuple[str, Any]]:
        now = time.monotonic()
        with self._lock:
            due = [
                i
                for i, (n, _) in enumerate(self._replicas)
                if now - self._down.get(n, -REPLICA_RETRY_S) >= REPLICA_RETRY_S
            ]
        if due:
            first = next(self._turn) % len(due)
            due = due[first:] + due[:first]
        up = [(self._replicas[i][0], g) for i in due if (g := self._replica(i)) is not None]
        return [*up, (self._primary_name, self.primary)]

    def _run(
        self,
        graph: Any,
        query: str,
        params: Mapping[str, Any] | None,
        *,
        read: bool,
        where: str,
        timeout_ms: int | None = None,
    ) -> list[Row]:
        try:
            run = graph.ro_query if read else graph.query
            result = run(query, dict(params or {}), timeout=timeout_ms)
        except Exception as exc:
            if _is_connection(exc) or (read and graph is not self._primary and str(exc).startswith(_NOT_READY)):
                raise _Unreachable(str(exc), where) from exc
            raise
        names = [_text(h[1]) for h in result.header]
        return [dict(zip(names, row, strict=True)) for row in result.result_set]


class _Unreachable(StoreUnavailableError):
    def __init__(self, detail: str, where: str) -> None:
        super().__init__(
            f"lost the connection to FalkorDB at {where}: {detail}",
            hint="check the server is running (evigraph server status) and retry; nothing half-written stays visible",
        )


def server_error(
    exc: Exception, where: str, *, given: bool = False, local: LocalServerAccess | None = None
) -> StoreError:
    """A connection failure as a one-line error naming the fix. `given`: the URL carried a password;
    `local`: the password came from this user's local server in that folder. No password is shown."""
    text = str(exc).lower()
    if "auth" in text or "password" in text or "noperm" in text or "wrongpass" in text:
        return _refused(where, given=given, local=local)
    if _is_connection(exc):
        return StoreUnavailableError(
            f"cannot reach FalkorDB at {where}",
            hint="start one with `evigraph server start`, or check the host and port in --db",
        )
    return StoreError(f"FalkorDB at {where} failed: {exc}", hint="check the server's log")


def _refused(where: str, *, given: bool, local: LocalServerAccess | None) -> StoreError:
    host, _, port = where.rpartition(":")
    in_url = f"falkordb://:PASSWORD@{where}/GRAPH"
    if given:
        return StoreError(
            f"FalkorDB at {where} refused the credentials",
            hint="put the right user and password in the URL: falkordb://user:password@host:port/graph",
        )
    if local is not None:
        shown = shlex.quote(str(local.dir))
        return StoreError(
            f"FalkorDB at {where} refused the password kept in {local.dir} for the evigraph server there",
            hint=f"restart that server so it runs with it: evigraph server stop --dir {shown}; "
            f"evigraph server start --dir {shown}",
        )
    if is_loopback(host):
        return StoreError(
            f"FalkorDB at {where} asks for a password, and no evigraph server of this user is registered "
            f"on port {port}",
            hint="if `evigraph server start` runs it, run `evigraph server status --dir DIR` as the user who "
            f"started it (that registers it for this user's clients), or put its password (DIR/password) in the "
            f"URL: {in_url}",
        )
    return StoreError(f"FalkorDB at {where} asks for a password", hint=f"put it in the URL: {in_url}")


def _is_connection(exc: Exception) -> bool:
    import redis.exceptions as rex

    return isinstance(exc, rex.ConnectionError | rex.TimeoutError | ConnectionError | OSError)


def _module_name(entry: Any) -> str:
    """A `MODULE LIST` entry's name: a flat [key, value, ...] list, or a map under RESP3."""
    if isinstance(entry, dict):
        return _text(entry.get("name", entry.get(b"name", "")))
    pairs = dict(zip(entry[::2], entry[1::2], strict=False))
    return _text(pairs.get("name", pairs.get(b"name", "")))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _client_module() -> Any:
    try:
        import falkordb
    except ImportError as exc:
        raise ConfigurationError(
            "the FalkorDB backend needs the falkordb client", hint="pip install 'evigraph[falkordb]'"
        ) from exc
    return falkordb


def read_only_error() -> StoreError:
    """What every write refuses with on a knowledge base opened read-only."""
    return StoreError("the knowledge base is open read-only", hint="open it writable to change it")
