"""`status` and `search` on a knowledge base an `evigraph ingest` is writing: answered, not refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.cli.ingest_process import IngestProcess, cli, write_corpus

from evigraph.errors import ConfigurationError
from evigraph.serving.backend import LocalBackend
from evigraph.serving.forwarding import RemoteBackend, forward_options, pointer_path

DOCUMENTS = 6000  # far more than the reads below take: the ingest is still running when they are answered


@pytest.mark.slow
def test_status_and_search_are_answered_while_an_ingest_writes(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "notes", DOCUMENTS)
    db = tmp_path / "kb.db"
    ingest = IngestProcess(corpus, db)
    try:
        ingest.wait_for(r"^created ")
        status = cli("status", "--db", str(db), "--json")
        search = cli("search", "Who moved the reef station?", "--db", str(db), "--json", "--paths", "passages")
        plain = cli("status", "--db", str(db))
        mcp_status, refused = asyncio.run(_as_mcp_servers(db))
        still_running = ingest.proc.poll() is None
        ingest.interrupt()
        code = ingest.finish(timeout=10)
    finally:
        ingest.kill()
    assert still_running, "the ingest ended before the reads: they proved nothing"
    assert status.returncode == 0, status.stderr
    counts = json.loads(status.stdout)
    assert 0 < counts["documents"] < DOCUMENTS and counts["passages"] >= counts["documents"]
    assert counts["entities"] > 0
    assert search.returncode == 0, search.stderr
    found = json.loads(search.stdout)
    assert found["passages"] and "station" in found["passages"][0]["text"].lower()
    assert plain.returncode == 0 and "documents" in plain.stdout, plain.stderr
    assert "Knowledge base: documents:" in mcp_status  # an `evigraph mcp` started meanwhile forwards to it
    assert "is being ingested by evigraph process" in refused and "without --allow-writes" in refused

    assert code == 130, "".join(ingest.err)
    assert not pointer_path(db.resolve()).exists()  # the ingest stopped serving when it ended
    after = cli("status", "--db", str(db), "--json")  # opened directly again
    assert after.returncode == 0 and json.loads(after.stdout)["documents"] >= counts["documents"]


async def _as_mcp_servers(db: Path) -> tuple[str, str]:
    """What a read-only `evigraph mcp` started now gets from `status`, and why a writable one is refused."""

    async def take_over() -> LocalBackend:
        raise AssertionError("the ingest holds the database: nothing to take over")

    reader = await RemoteBackend.connect(db.resolve(), take_over, forward_options(True, None, ()))
    try:
        reply = await reader.call("test", "status", {})
    finally:
        await reader.close()
    try:
        await RemoteBackend.connect(db.resolve(), take_over, forward_options(False, None, ()))
    except ConfigurationError as exc:
        return reply.text, str(exc)
    raise AssertionError("a writable server was let in beside the ingest")
