"""The test suite's own guard against a FalkorDB engine that stops answering mid-run (FalkorDB
issue #2129): the conftest hook kills the worker's hung server and runs the test once more on a
new one, while a test that fails on a server that still answers fails as it is. Run here in a
child pytest with a copy of the suite's conftest, on a real server made to hang by SIGSTOP."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHILD_TESTS = """
import json
import os
import signal
from pathlib import Path

from evigraph.store.falkordb.server_client import connect

HUNG_ONCE = Path(__file__).with_name("hung-once")


def _ping(server):
    client = connect(server.host, server.port, server.password, timeout=2)
    try:
        return client.ping()
    finally:
        client.close()


def test_a_server_that_hangs_once(falkordb_server):
    if not HUNG_ONCE.exists():
        HUNG_ONCE.write_text(str(falkordb_server.port))
        pid = json.loads((falkordb_server.dir / "server.pid").read_text())["pid"]
        os.kill(pid, signal.SIGSTOP)
    assert _ping(falkordb_server)


def test_a_real_failure_on_a_live_server(falkordb_server):
    assert _ping(falkordb_server)
    assert 1 + 1 == 3, "a genuine failure"
"""


def test_a_hung_server_is_replaced_and_only_its_test_runs_again(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).parents[2] / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_child.py").write_text(CHILD_TESTS)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-rA",
            "-W",
            "default",
            "--rootdir",
            str(tmp_path),
            "-c",
            "/dev/null",
            str(tmp_path / "test_child.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = run.stdout
    assert run.returncode == 1, out  # the genuine failure stays a failure
    assert "PASSED test_child.py::test_a_server_that_hangs_once" in out
    assert "FAILED test_child.py::test_a_real_failure_on_a_live_server" in out
    assert "1 failed, 1 passed" in out
    hung_port = (tmp_path / "hung-once").read_text()
    assert (
        f"the FalkorDB test server on port {hung_port} stopped answering during "
        "test_child.py::test_a_server_that_hangs_once; killed it and ran the test again on a new one"
    ) in out
    assert out.count("stopped answering") == 1  # the genuine failure was not run again
