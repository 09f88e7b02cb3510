"""The server going away mid-ingest: the CLI stops with one line naming the fix, and once the
server is back (its data persisted) every document is whole or absent, never half written."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import redis
from tests.conftest import free_port

from evigraph import KnowledgeBase
from evigraph.store import knowledge_bases
from evigraph.store.falkordb.server import LocalServer


def written(server: LocalServer) -> int:
    """Documents switched in so far (0 before the knowledge base exists)."""
    if "lost" not in knowledge_bases(f"falkordb://127.0.0.1:{server.port}"):
        return 0
    reply = redis.Redis(port=server.port, password=server.password()).execute_command(
        "GRAPH.RO_QUERY", "lost", "MATCH (d:Document) WHERE d.version IS NOT NULL RETURN count(d)"
    )
    return int(reply[1][0][0])


def test_a_server_lost_mid_ingest_leaves_whole_documents_and_a_one_line_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(300):
        body = " ".join(f"Note {i} line {j}: Ada Lovelace met Charles Babbage in London." for j in range(30))
        (docs / f"n{i:03d}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")
    server = LocalServer(tmp_path / "server", port=free_port(), host="127.0.0.1")
    server.start(persist=True)
    db = f"falkordb://127.0.0.1:{server.port}/lost"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evigraph", "ingest", str(docs), "--db", db, "--extractor", "rules", "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and written(server) == 0:  # some documents, more on the way
            time.sleep(0.1)
        server.stop()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode != 0
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and "FalkorDB" in lines[-1] and "server" in lines[-1], err
        assert "Traceback" not in err

        server.start(persist=True)

        async def whole() -> list[tuple[int, int]]:
            async with KnowledgeBase(db, read_only=True) as kb:
                await kb.open()
                store = kb.store
                assert store is not None
                found = await kb.documents(limit=1000)
                return [(d.chunks, len(await store.document_passages(d.key))) for d in found]

        counts = asyncio.run(whole())
        assert counts, "nothing was written before the server went away"
        assert len(counts) < 300, "the ingest finished before the server was stopped: nothing was tested"
        assert all(stored == readable > 0 for stored, readable in counts)
    finally:
        server.stop()
