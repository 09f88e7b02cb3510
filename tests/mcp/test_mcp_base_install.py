"""`evigraph mcp` works from a plain `pip install -e .`: the MCP server is part of the base install.

The README used to say `pip install 'evigraph[mcp]'`, which cannot work for a package installed
from source, and after the README's set-up `evigraph mcp` died with a raw ModuleNotFoundError.
This test builds a fresh virtual environment (no system packages), installs evigraph there with
no extras, and talks to that environment's `evigraph mcp` with the SDK's own stdio client, by the
absolute path of the command, as an IDE's config names it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from tests.mcp.conftest import CALL_TIMEOUT_S, QUESTION, READ_TOOLS, call, child_env, copy_db

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new environment with evigraph installed from this checkout and nothing else asked for."""
    venv = tmp_path_factory.mktemp("base-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        env=env,
    )
    if done.returncode != 0:
        pytest.fail(f"pip install -e . failed in a fresh environment:\n{done.stderr[-3000:]}")
    return venv


@pytest.mark.slow
async def test_mcp_serves_from_a_fresh_base_install(base_venv: Path, sample_db: Path, tmp_path: Path) -> None:
    python, command = base_venv / "bin" / "python", base_venv / "bin" / "evigraph"
    for optional in ("spacy", "sentence_transformers", "torch", "kuzu"):  # truly the base install
        probe = subprocess.run([str(python), "-c", f"import {optional}"], capture_output=True, timeout=60)
        assert probe.returncode != 0, f"{optional} is importable in the base install"
    db = copy_db(sample_db, tmp_path)
    params = StdioServerParameters(
        command=str(command), args=["mcp", "--db", str(db)], env=child_env(), cwd=str(tmp_path)
    )
    with (tmp_path / "server.log").open("w", encoding="utf-8") as log:
        async with Client(stdio_client(params, errlog=log), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == READ_TOOLS
            found = await call(client, "retrieve", {"question": QUESTION, "top_k": 3})
            assert found["passages"] and found["passages"][0]["n"] == 1
    doctor = subprocess.run([str(command), "doctor"], capture_output=True, text=True, timeout=60)
    assert doctor.returncode == 0, doctor.stderr
    assert "ok  mcp" in doctor.stdout and "-- " in doctor.stdout  # usable MCP; spaCy and embedders missing
    assert f"-e '{ROOT}[spacy]'" in doctor.stdout  # the install that works for a source checkout
