"""`evigraph mcp` over HTTP says where it listens, and a busy port is one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.mcp.conftest import child_env, copy_db, running

CLI = (sys.executable, "-m", "evigraph")


def test_http_and_sse_servers_print_their_url(sample_db: Path, tmp_path: Path) -> None:
    for transport, path, kind in (("http", "/mcp", "streamable HTTP"), ("sse", "/sse", "SSE")):
        db = copy_db(sample_db, tmp_path / transport)
        with running(db, transport) as server:
            assert server.url.endswith(path)
        assert f"serving MCP over {kind} at {server.url}" in server.stderr()


def test_a_busy_port_is_refused_in_one_line(sample_db: Path, tmp_path: Path) -> None:
    first = copy_db(sample_db, tmp_path / "a")
    second = copy_db(sample_db, tmp_path / "b")
    with running(first, "http") as server:
        refused = subprocess.run(
            [*CLI, "mcp", "--db", str(second), "--transport", "http", "--port", str(server.port)],
            capture_output=True,
            text=True,
            timeout=60,
            env=child_env(),
            stdin=subprocess.DEVNULL,
        )
    assert refused.returncode == 2
    assert f"cannot listen on 127.0.0.1:{server.port}" in refused.stderr and "--port" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (second.parent / f"{second.name}.mcp.json").exists()  # nothing left behind
