"""This user's local FalkorDB servers: their passwords, their private files, and how clients find them.

`evigraph server start` gives the server it runs a generated password, kept in the server's folder
(`DIR/password`, mode 0600, the folder 0700), and records the server in a per-user registry: one
file per port, `$XDG_STATE_HOME/evigraph/servers/<port>.json` (else `~/.local/state/...`), naming
the folder. A client given a loopback location without credentials
(`falkordb://127.0.0.1:6379/kb`, the README's flow, which never names the folder) looks the port up
there, checks that the folder's pidfile names a live server on that port, and reads the password
from the folder. Nobody types it and nothing prints it; `stop` removes the entry, and `status`
writes it again when it is missing (a registry lost or kept under another `$XDG_STATE_HOME`).

Why a registry keyed by port: the client knows only host and port; the server cannot be asked for
its password; and the other users of the machine must not find it, so it lives in files only its
owner reads (the password itself stays in the one file in the server's folder).

Nothing here imports redis or falkordb: every `falkordb://` connection consults it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evigraph.errors import ConfigurationError

PIDFILE = "server.pid"
PASSWORD_FILE = "password"
PASSWORD_BYTES = 32
"""Random bytes in a generated password (`secrets.token_urlsafe`: 43 characters, 256 bits)."""
PRIVATE = 0o077
"""Permission bits for group and others: none of them on the server's folder and files."""


@dataclass(frozen=True)
class LocalServerAccess:
    """What a client needs to reach a local server of this user: its folder and password."""

    dir: Path
    password: str

    def __repr__(self) -> str:  # never shows the password, whatever prints the object
        return f"LocalServerAccess(dir={str(self.dir)!r})"


def registry_dir() -> Path:
    """Where this user's running servers are listed: `$XDG_STATE_HOME/evigraph/servers`, else
    `~/.local/state/evigraph/servers` (state that outlives a login, unlike `$XDG_RUNTIME_DIR`,
    which a server that keeps running after a logout would outlive)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "evigraph" / "servers"


def is_loopback(host: str | None) -> bool:
    """Whether `host` names this machine's loopback interface, where only local servers listen."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# -- private files -----------------------------------------------------------------------------


def make_private_dir(path: Path) -> None:
    """Create `path` (and its parents) and take group and other permissions off it: a folder of
    0700 keeps every file in it from other users, whatever modes the files were given."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = path.stat().st_mode & 0o777
    if mode & PRIVATE:
        path.chmod(mode & ~PRIVATE)


def tighten(path: Path) -> None:
    """Take group and other permissions off a file or folder of ours, if it exists."""
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o777
        if mode & PRIVATE:
            path.chmod(mode & ~PRIVATE)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` as a 0600 file, whole or not at all (a temporary file renamed)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


# -- the password ------------------------------------------------------------------------------


def server_password(folder: Path) -> str:
    """The password of the server run from `folder`, generated and kept there at its first start;
    the same at every later start, so a client or replica given it keeps working."""
    found = read_password(folder)
    if found is not None:
        tighten(folder / PASSWORD_FILE)
        return found
    made = secrets.token_urlsafe(PASSWORD_BYTES)
    write_private(folder / PASSWORD_FILE, made + "\n")
    return made


def read_password(folder: Path) -> str | None:
    """The password kept in `folder`, None when there is none (never started, or not readable)."""
    try:
        text = (folder / PASSWORD_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text:
        return None
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ConfigurationError(
            f"the password file {folder / PASSWORD_FILE} holds spaces or control characters",
            hint="delete the file and start the server again: a new password is generated",
        )
    return text


# -- the registry ------------------------------------------------------------------------------


def register(port: int, folder: Path) -> None:
    """List the server run from `folder` as the one on `port`, for this user's clients."""
    where = registry_dir()
    try:
        make_private_dir(where)
        write_private(where / f"{port}.json", json.dumps({"port": port, "dir": str(folder)}) + "\n")
    except OSError as exc:
        raise ConfigurationError(
            f"cannot list the server in {where}, where this user's clients look for its password: "
            f"{exc.strerror or exc}",
            hint="make that folder writable, or set XDG_STATE_HOME to a folder of yours",
        ) from exc


def unregister(port: int, folder: Path) -> None:
    """Drop `port`'s entry if it names `folder` (another server may have taken the port since)."""
    entry = registry_dir() / f"{port}.json"
    if _entry_dir(entry) == folder:
        entry.unlink(missing_ok=True)


def registered_dir(port: int) -> Path | None:
    """The folder of this user's live evigraph server on `port`: the registry's entry, checked
    against that folder's pidfile (a stale entry, or one whose server moved, names nothing)."""
    folder = _entry_dir(registry_dir() / f"{port}.json")
    if folder is None:
        return None
    record = read_pidfile(folder)
    if record is None or record.get("port") != port or not pid_alive(int(record.get("pid", 0))):
        return None
    return folder


def local_access(host: str | None, port: int) -> LocalServerAccess | None:
    """How to reach the local evigraph server of this user on a loopback `host:port`, if there is one."""
    if not is_loopback(host):
        return None
    folder = registered_dir(port)
    if folder is None:
        return None
    try:
        password = read_password(folder)
    except ConfigurationError:
        return None
    return LocalServerAccess(folder, password) if password else None


def _entry_dir(entry: Path) -> Path | None:
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        return Path(str(data["dir"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# -- the pidfile and the process ---------------------------------------------------------------


def read_pidfile(folder: Path) -> dict[str, Any] | None:
    """The pidfile's content (pid, host, port, persist), None when absent or unreadable."""
    try:
        data = json.loads((folder / PIDFILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live redis-server (a reused pid running something else is not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return is_redis(pid)


def is_redis(pid: int) -> bool:
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
