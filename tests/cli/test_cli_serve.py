"""`evigraph serve` refuses, in one line naming the fix and before opening anything, what it must not serve."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from tests.conftest import CliResult, free_port, run_cli

NO_TOKEN = {"EVIGRAPH_MCP_TOKEN": "", "EVIGRAPH_MCP_READ_ONLY": "", "EVIGRAPH_MCP_ALLOW_WRITES": ""}


def serve(tmp_path: Path, *args: str) -> CliResult:
    return run_cli("serve", "--port", str(free_port()), *args, cwd=tmp_path, env=NO_TOKEN, timeout=60)


def refused(result: CliResult, *words: str) -> None:
    assert result.code == 2, (result.code, result.err)
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_off_loopback_without_a_token_it_does_not_start(tmp_path: Path) -> None:
    result = serve(tmp_path, "--db", str(tmp_path / "kb.db"), "--host", "0.0.0.0")
    refused(result, "refusing to serve the REST API on 0.0.0.0 without a token", "--token", "EVIGRAPH_MCP_TOKEN")
    assert not (tmp_path / "kb.db").exists()  # nothing was opened or created


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--db-dir", "{tmp}", "--mcp-path", "/m"], ["--mcp-path says where MCP is served", "--with-mcp"]),
        (["--db-dir", "{tmp}/missing"], ["is not a folder"]),
        (["--cors-origin", "*"], ["is not an origin", "http://localhost:5173"]),
        (["--cors-origin", "http://localhost:5173/app"], ["is not an origin"]),
        (["--read-only", "--allow-writes"], ["--read-only conflicts with --allow-writes"]),
        (["--db-dir", "{tmp}", "--max-open", "0"], ["--max-open '0' is not a number of knowledge bases of 1 or more"]),
        (
            ["--allow-writes", "--project", "p"],
            ["a writable server was given project 'p' but no agent", "--agent NAME", "EVIGRAPH_MCP_AGENT"],
        ),
        (
            ["--files-root", "{tmp}", "--agent", "a"],
            ["a writable server was given agent 'a' but no project", "--project NAME", "EVIGRAPH_MCP_PROJECT"],
        ),
    ],
)
def test_contradictions_are_refused(tmp_path: Path, args: list[str], words: list[str]) -> None:
    refused(serve(tmp_path, *[a.format(tmp=tmp_path) for a in args]), *words)


def test_a_busy_port_is_said_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        result = run_cli("serve", "--db", str(tmp_path / "kb.db"), "--port", port, cwd=tmp_path, env=NO_TOKEN)
    refused(result, f"cannot listen on 127.0.0.1:{port}", "--port")


def test_db_and_db_dir_are_one_choice(tmp_path: Path) -> None:
    result = serve(tmp_path, "--db", "kb.db", "--db-dir", str(tmp_path))
    assert result.code == 2 and "not allowed with argument" in result.err


@pytest.mark.parametrize(
    ("variable", "words"),
    [
        ("EVIGRAPH_SERVE_MAX_OPEN", "EVIGRAPH_SERVE_MAX_OPEN 'many' is not a number of knowledge bases"),
        ("EVIGRAPH_SESSION_IDLE_MINUTES", "EVIGRAPH_SESSION_IDLE_MINUTES='many' is not a number of minutes"),
        ("EVIGRAPH_SESSION_MEMORY_MB", "EVIGRAPH_SESSION_MEMORY_MB='many' is not a number of megabytes"),
    ],
)
def test_a_bad_bound_in_the_environment_is_refused_at_start(tmp_path: Path, variable: str, words: str) -> None:
    port = str(free_port())
    env = {**NO_TOKEN, variable: "many"}
    result = run_cli("serve", "--db-dir", str(tmp_path), "--port", port, cwd=tmp_path, env=env, timeout=60)
    refused(result, words)
