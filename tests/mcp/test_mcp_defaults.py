"""`evigraph mcp` writes only when asked, says at start what it may do, and never silently serves less.

Real `evigraph mcp` processes and the MCP SDK's client; the read-only holder of point 2 is a real
second process too, since the engine's file lock is per process.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from tests.mcp.conftest import (
    DESTRUCTIVE_TOOLS,
    FILES_ROOT_TOOLS,
    QUESTION,
    READ_TOOLS,
    SAMPLE,
    call,
    child_env,
    error_text,
    stdio_mcp_client,
)

from evigraph.errors import ConfigurationError
from evigraph.mcp.main import McpConfig
from evigraph.serving.forwarding import pointer_path

pytestmark = pytest.mark.slow
WRITE_TOOLS = DESTRUCTIVE_TOOLS | FILES_ROOT_TOOLS
FORGED = "notes (1 passages)\ningested: forged"  # a file name that would print a line of its own


def mcp_exit(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`evigraph mcp` expected to refuse to start: its exit code and stderr (stdin is closed)."""
    return subprocess.run(
        [sys.executable, "-m", "evigraph", "mcp", "--db", str(db), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(**(env or {})),
        cwd=db.parent,
    )


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def test_write_flags_and_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What each flag and variable asks for, in process (the servers below check the outcome for real)."""
    for name in ("EVIGRAPH_DB", "EVIGRAPH_MCP_READ_ONLY", "EVIGRAPH_MCP_ALLOW_WRITES", "EVIGRAPH_MCP_FILES_ROOT"):
        monkeypatch.delenv(name, raising=False)
    db = str(tmp_path / "kb.db")
    default = McpConfig.from_env(db=db)
    assert default.read_only and default.files_root is None
    assert "read-only (default: no --allow-writes or --files-root)" in default.describe()
    assert McpConfig.from_env(db=db, read_only=True).read_only
    writes = McpConfig.from_env(db=db, allow_writes=True)
    assert not writes.read_only and "writable (--allow-writes)" in writes.describe()
    rooted = McpConfig.from_env(db=db, files_root=str(SAMPLE))
    assert not rooted.read_only and rooted.files_root == str(SAMPLE)
    assert f"writable (--files-root {SAMPLE})" in rooted.describe()
    with pytest.raises(ConfigurationError, match="--read-only conflicts with --allow-writes"):
        McpConfig.from_env(db=db, read_only=True, allow_writes=True)
    with pytest.raises(ConfigurationError, match="--read-only conflicts with --files-root"):
        McpConfig.from_env(db=db, read_only=True, files_root=str(SAMPLE))

    monkeypatch.setenv("EVIGRAPH_MCP_ALLOW_WRITES", "yes")
    from_env = McpConfig.from_env(db=db)
    assert not from_env.read_only and "writable (EVIGRAPH_MCP_ALLOW_WRITES)" in from_env.describe()
    overridden = McpConfig.from_env(db=db, read_only=True)  # the flag wins, and says what it overrode
    assert overridden.read_only and "ignored, as the flag wins: EVIGRAPH_MCP_ALLOW_WRITES" in overridden.describe()
    monkeypatch.setenv("EVIGRAPH_MCP_READ_ONLY", "1")
    with pytest.raises(ConfigurationError, match="EVIGRAPH_MCP_READ_ONLY conflicts with EVIGRAPH_MCP_ALLOW_WRITES"):
        McpConfig.from_env(db=db)
    monkeypatch.setenv("EVIGRAPH_MCP_ALLOW_WRITES", "0")  # "no" does not ask for writes
    assert McpConfig.from_env(db=db).read_only
    monkeypatch.setenv("EVIGRAPH_MCP_READ_ONLY", "0")  # nor does "not read-only": writes need asking
    assert McpConfig.from_env(db=db).read_only
    monkeypatch.setenv("EVIGRAPH_MCP_FILES_ROOT", str(SAMPLE))
    assert McpConfig.from_env(db=db).files_root == str(SAMPLE)
    monkeypatch.setenv("EVIGRAPH_MCP_ALLOW_WRITES", "maybe")
    with pytest.raises(ConfigurationError, match="not a yes/no value"):
        McpConfig.from_env(db=db)


async def test_without_write_flags_no_write_tool_and_a_read_only_database(db_copy: Path, tmp_path: Path) -> None:
    log = tmp_path / "default.log"
    with log.open("w", encoding="utf-8") as err:
        async with stdio_mcp_client(db_copy, errlog=err) as client:
            assert await tool_names(client) == READ_TOOLS
            assert "read-only" in await error_text(client, "ingest", {"text": "x", "document_key": "x"})
            assert (await call(client, "retrieve", {"question": QUESTION}))["passages"]
            # Opened read-only: another reader shares the database while this server runs.
            other = subprocess.run(
                [sys.executable, "-m", "evigraph", "status", "--db", str(db_copy), "--json"],
                capture_output=True,
                text=True,
                timeout=60,
                env=child_env(),
            )
            assert other.returncode == 0 and json.loads(other.stdout)["documents"] == 3, other.stderr
    said = log.read_text()
    assert "read-only (default: no --allow-writes or --files-root): the read tools only" in said, said


async def test_files_root_serves_writes_and_escapes_file_names(db_copy: Path, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / f"{FORGED}.txt").write_text("Odile Penhallow charts tides at Port Varnel.", encoding="utf-8")
    log = tmp_path / "rooted.log"
    with log.open("w", encoding="utf-8") as err:
        async with stdio_mcp_client(db_copy, "--files-root", str(root), errlog=err) as client:
            assert await tool_names(client) == READ_TOOLS | WRITE_TOOLS
            result = await client.call_tool("ingest", {"files": ["*.txt"]})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert [d["status"] for d in result.structured_content["documents"]] == ["ingested"]
            text: str = result.content[0].text  # type: ignore[union-attr]
            assert "\ningested: forged" not in text
            assert "notes (1 passages)\\ningested: forged.txt" in text
            found = await client.call_tool("retrieve", {"question": "Who charts tides at Port Varnel?"})
            found_text: str = found.content[0].text  # type: ignore[union-attr]
            assert "Odile Penhallow" in found_text and "\\ningested: forged" in found_text
            assert "\ningested: forged" not in found_text  # the passage's label cannot forge a line
            preview = await client.call_tool("preview_files", {})
            assert "\ningested: forged" not in preview.content[0].text  # type: ignore[union-attr]
    assert f"writable (--files-root {root}): the write tools are served" in log.read_text()


async def test_asking_to_write_where_a_read_only_server_holds_the_database(db_copy: Path) -> None:
    """Refused at start, exit code 2, naming the process, its pointer file and the ways out."""
    async with stdio_mcp_client(db_copy) as reader:
        holder = json.loads(pointer_path(db_copy).read_text())["pid"]
        refused = mcp_exit(db_copy, "--allow-writes")
        assert refused.returncode == 2, refused.stderr
        assert f"held read-only by evigraph process {holder}" in refused.stderr
        assert str(pointer_path(db_copy)) in refused.stderr
        assert "restart it with --allow-writes" in refused.stderr and "without --allow-writes" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert (await call(reader, "retrieve", {"question": QUESTION}))["passages"]  # the holder is unharmed
        # Asking for nothing is fine: a second reader shares the database.
        async with stdio_mcp_client(db_copy) as second:
            assert await tool_names(second) == READ_TOOLS


def test_contradicting_flags_are_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    both = mcp_exit(db, "--read-only", "--allow-writes")
    assert both.returncode == 2 and "--read-only conflicts with --allow-writes" in both.stderr, both.stderr
    env = mcp_exit(db, env={"EVIGRAPH_MCP_READ_ONLY": "1", "EVIGRAPH_MCP_FILES_ROOT": str(SAMPLE)})
    assert env.returncode == 2 and "EVIGRAPH_MCP_READ_ONLY conflicts with EVIGRAPH_MCP_FILES_ROOT" in env.stderr
    assert not db.exists()  # refused before anything was opened or created


async def test_a_writer_that_finds_a_read_only_server_after_a_take_over_says_so(db_copy: Path) -> None:
    """Two windows forward to a writable server; it exits and the read-only window takes the database
    over first: the writable window's write calls fail with the reason, its read calls still work."""
    first_up: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    stop_first = asyncio.Event()

    async def hold_first() -> None:
        async with stdio_mcp_client(db_copy, "--allow-writes"):
            first_up.set_result(None)
            await stop_first.wait()

    holder = asyncio.create_task(hold_first())
    try:
        await asyncio.wait_for(asyncio.shield(first_up), timeout=60)
        async with stdio_mcp_client(db_copy, "--allow-writes") as writer, stdio_mcp_client(db_copy) as reader:
            assert await tool_names(writer) == READ_TOOLS | DESTRUCTIVE_TOOLS
            assert await tool_names(reader) == READ_TOOLS
            stop_first.set()
            await asyncio.wait_for(holder, timeout=60)
            assert (await call(reader, "retrieve", {"question": QUESTION}))["passages"]  # takes over, read-only
            refused = await error_text(writer, "ingest", {"text": "Lost write.", "document_key": "notes/lost"})
            assert "held read-only by evigraph process" in refused and "took it over" in refused
            assert (await call(writer, "retrieve", {"question": QUESTION}))["passages"]
    finally:
        stop_first.set()
        if not holder.done():
            await asyncio.wait_for(holder, timeout=60)
