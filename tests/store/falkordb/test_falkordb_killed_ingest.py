"""An ingesting client stopped between any two of its writes to a FalkorDB graph: no tool ever
shows a passage, entity, mention or relation of a version that was not switched in; `check`
reports a dead writer's leftovers at once (by its lease, not their age) and never a live
writer's; repair removes them and the ingest run again ends clean.

Real processes on a real server: the `evigraph ingest` child below stops after its n-th write
query of the document write and waits on stdin; the test then SIGKILLs it, or lets it go on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FalkorServer

from evigraph import KnowledgeBase
from evigraph.store.falkordb.leases import lease_key, live_writers
from evigraph.store.falkordb.store import FalkorStore
from evigraph.tools.toolkit import Toolkit

pytest.importorskip("falkordb")
pytestmark = pytest.mark.slow

CHILD = r"""
import sys
from evigraph.store.falkordb import connection, documents, leases

db, folder, stop = sys.argv[1], sys.argv[2], sys.argv[3]
if len(sys.argv) > 4:  # a short lease, to watch one lapse
    leases.LEASE_TTL_MS, leases.LEASE_RENEW_S = int(sys.argv[4]), float(sys.argv[5])
writes, inside, stopped = 0, False, False
write_versions, write_sync = documents.write_versions, connection.Connection.write_sync

def counted_versions(conn, versions):
    global inside
    inside = True
    try:
        return write_versions(conn, versions)
    finally:
        inside = False

def wait():
    global stopped
    stopped = True
    print("stopped", flush=True)
    sys.stdin.readline()  # the test SIGKILLs this process here, or lets it go on

def counted_sync(self, query, params=None):
    global writes
    if inside and stop == "switch" and "MERGE (d:Document" in query and not stopped:
        wait()
    rows = write_sync(self, query, params)
    if inside:
        writes += 1
        if str(writes) == stop:
            wait()
    return rows

documents.write_versions, connection.Connection.write_sync = counted_versions, counted_sync
from evigraph.cli import main
code = main(["ingest", folder, "--db", db, "--extractor", "rules", "--quiet"])
print(f"writes {writes}", flush=True)
sys.exit(code)
"""
"""`python -c CHILD DB FOLDER STOP [TTL_MS RENEW_S]`: `evigraph ingest FOLDER --db DB` that stops
after its STOP-th write query of a document write, or before its switch when STOP is `switch`."""

BEFORE = {
    "lab.md": "# Lab\n\nAda Lovelace met Charles Babbage in London.\n\nThe lab later moved to Paris.\n",
}
AFTER = {  # what the stopped ingest adds: a new relation source, new mentions and new entities
    "visit.md": "# Visit\n\nAda Lovelace met Charles Babbage in London.\n\n"
    "## Later\n\nGrace Hopper visited Ada Lovelace.\n",
    "notes.md": "# Notes\n\nAlan Turing wrote to Grace Hopper from Manchester.\n",
}
CHANGED = {  # the first document again, without the sentence that alone names Paris
    "lab.md": "# Lab\n\nAda Lovelace met Charles Babbage in London.\n",
}
QUESTION = "Who did Ada Lovelace and Grace Hopper meet in London, Paris and Manchester?"
NAMES = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Manchester", "Paris")
CYPHER = (
    "MATCH (e:Entity) RETURN e.name AS name, e.label AS label, e.description AS d, e.aliases AS a ORDER BY name",
    "MATCH (e:Entity)-[m:MENTIONED_IN]->(c:Chunk) RETURN e.name AS e, c.text AS t, m.span_starts AS s ORDER BY e, t",
    """MATCH (a:Entity)-[r:RELATES]->(b:Entity)
       RETURN a.name AS a, b.name AS b, r.fact AS f, size(r.source_chunks) AS n ORDER BY a, b, f""",
    "MATCH (e:Entity) OPTIONAL MATCH (e)-[m:MENTIONED_IN]->() RETURN count(DISTINCT e) AS e, count(m) AS m",
    "MATCH (c:Chunk) RETURN c.text AS t ORDER BY t",
)


class Child:
    """The ingest child (`CHILD`); `stop` 0 runs it through."""

    def __init__(self, db: str, folder: Path, stop: int | str, *lease: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, db, str(folder), str(stop), *lease],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def stopped(self) -> bool:
        """Wait until it stops at its point (True) or ends without reaching it (False)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.startswith("stopped"):
            return True
        self.finish()
        return False

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)

    def finish(self) -> tuple[str, str]:
        """Let it go on to the end; its stdout and stderr."""
        out, err = self.proc.communicate("go\n", timeout=300)
        assert self.proc.returncode == 0, err
        return out, err


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    before = write(tmp_path / "before", BEFORE)
    after = write(tmp_path / "after", AFTER)
    yield before, after


def ingest(db: str, folder: Path) -> None:
    async def run() -> None:
        async with KnowledgeBase(db, extractor="rules") as kb:
            assert (await kb.ingest([folder], progress=False)).ok

    asyncio.run(run())


def visible(db: str) -> dict[str, Any]:
    """What the read tools show of the graph, without passage ids (they name version numbers)."""

    async def run() -> dict[str, Any]:
        async with KnowledgeBase(db, read_only=True) as kb:
            tk = Toolkit(kb, read_only=True)
            seen: dict[str, Any] = {}
            st = await tk.call("status")
            seen["status"] = (st.documents, st.passages, st.entities, st.relations, st.labels, st.relation_types)  # type: ignore[attr-defined]
            got = await tk.call("retrieve", {"question": QUESTION})
            seen["retrieve"] = (
                sorted(p.text for p in got.passages),  # type: ignore[attr-defined]
                sorted((e.name, e.label, e.description) for e in got.entities),  # type: ignore[attr-defined]
                sorted(
                    (r.source, r.type, r.target, r.fact, len(r.passages))
                    for r in [*got.relations, *got.facts]  # type: ignore[attr-defined]
                ),
            )
            for name in NAMES:
                found = await tk.call("search_entities", {"query": name})
                seen[f"search {name}"] = sorted(
                    (e.name, e.label, e.description, sorted(p.text for p in e.support))
                    for e in found.hits  # type: ignore[attr-defined]
                )
            walk = await tk.call("explore_relationships", {"entity": "unknown:ada lovelace"})
            seen["explore"] = (
                sorted((n.name, n.label, n.description) for n in walk.nodes),  # type: ignore[attr-defined]
                sorted((r.source, r.target, r.fact, len(r.passages)) for r in walk.edges),  # type: ignore[attr-defined]
            )
            ontology = await tk.call("get_ontology")
            seen["ontology"] = sorted((t.name, t.rows) for t in ontology.tables)  # type: ignore[attr-defined]
            for query in CYPHER:
                seen[query] = (await tk.call("cypher_query", {"query": query, "limit": 1000})).rows  # type: ignore[attr-defined]
            return seen

    return asyncio.run(run())


def pending(db: str) -> list[str]:
    """The passages written aside and not switched in, read past the tools."""

    async def run() -> list[str]:
        async with KnowledgeBase(db, read_only=True) as kb:
            await kb.open()
            store = kb.store
            assert isinstance(store, FalkorStore)
            rows = store.conn.read_sync("MATCH (c:PendingChunk) RETURN c.id AS id")
            return sorted(r["id"] for r in rows)

    return asyncio.run(run())


def check(db: str, repair: bool = False) -> tuple[dict[str, list[str]], dict[str, int]]:
    """What `check` found (kind -> examples) and, with `repair`, what it repaired."""

    async def run() -> tuple[dict[str, list[str]], dict[str, int]]:
        async with KnowledgeBase(db) as kb:
            report = await kb.check(repair=repair)
            if repair:
                assert report.remaining == []
            return {p.kind: sorted(p.examples) for p in report.found}, report.repaired

    return asyncio.run(run())


def test_a_client_killed_between_any_two_writes_shows_nothing_unswitched_and_check_finds_its_leftovers(
    falkordb_server: FalkorServer, tmp_path: Path
) -> None:
    """The ingest writes two new documents and a new version of one already there (which drops an
    entity), so each of its writes, cleanup included, is a point to stop it at."""

    def prepared(name: str) -> tuple[str, Path]:
        db, folder = falkordb_server.url(name), write(tmp_path / name, BEFORE)
        ingest(db, folder)
        write(folder, {**AFTER, **CHANGED})
        return db, folder

    reference, folder = prepared("killed_reference")
    before = visible(reference)
    out, _ = Child(reference, folder, 0).finish()
    writes = int(out.split()[-1])
    after = visible(reference)
    assert before["status"][0] == 1 and after["status"][0] == 3
    assert before["search Paris"] and not after["search Paris"]
    assert writes >= 5, out  # allocate, the passages aside, the switch, then the cleanup of the old version

    for stop in range(1, writes + 1):
        db, folder = prepared(f"killed_at_{stop}")
        child = Child(db, folder, stop)
        assert child.stopped(), f"the ingest ended before its write {stop}"
        left = pending(db)
        # A live writer's work in progress is neither reported nor removed.
        found, _ = check(db)
        assert "abandoned_chunks" not in found and "orphan_entities" not in found
        check(db, repair=True)
        assert pending(db) == left
        child.kill()

        shown = visible(db)
        switched = shown["status"][0] == 3
        if not switched:
            assert shown == before, f"killed after write {stop} of {writes}"
        left = pending(db)
        found, _ = check(db)  # at once: no grace period to wait out
        assert found.get("abandoned_chunks", []) == left[:5], f"killed after write {stop}"
        assert left == [] or not switched
        assert switched or set(found) <= {"abandoned_chunks"}

        _, repaired = check(db, repair=True)
        assert repaired.get("abandoned_chunks", 0) == len(left)
        assert pending(db) == [] and check(db)[0] == {}
        assert visible(db) == (after if switched else before)

        Child(db, folder, 0).finish()  # the same ingest again
        assert check(db)[0] == {}
        assert visible(db) == after


def test_a_hung_writer_is_taken_for_dead_once_its_lease_lapses(
    falkordb_server: FalkorServer, corpus: tuple[Path, Path]
) -> None:
    """A writer that renews its lease keeps its work however long it takes; one stopped (SIGSTOP,
    its connection still open) stops renewing, and once its lease lapses its passages are
    reported. A 1 s lease renewed every 0.2 s stands in for the 15 s one."""
    before_docs, after_docs = corpus
    db = falkordb_server.url("hung")
    ingest(db, before_docs)
    child = Child(db, after_docs, "switch", "1000", "0.2")
    assert child.stopped()
    left = pending(db)
    assert left
    [key] = _leases(db)
    assert _ttl_renewed(db, key), "a live writer renews its lease"
    assert check(db)[0] == {}
    os.kill(child.proc.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 60
        while _leases(db) and time.monotonic() < deadline:  # the server lets it lapse
            time.sleep(0.1)
        assert _leases(db) == []
        assert check(db)[0] == {"abandoned_chunks": left[:5]}
        check(db, repair=True)
        assert pending(db) == []
    finally:
        os.kill(child.proc.pid, signal.SIGKILL)
        child.proc.wait(timeout=60)
    assert visible(db)["status"][0] == 1


def test_a_writer_that_lost_its_switch_leaves_nothing(falkordb_server: FalkorServer, corpus: tuple[Path, Path]) -> None:
    """Another process switches newer versions of the same documents in while this one waits before
    its switch: the switch refuses, undone whole, and the writer deletes what it put aside."""
    before_docs, after_docs = corpus
    db = falkordb_server.url("lost_switch")
    ingest(db, before_docs)
    child = Child(db, after_docs, "switch")
    assert child.stopped()
    _rewrite(after_docs)
    ingest(db, after_docs)  # newer versions of both, switched in
    newer = visible(db)
    child.finish()
    assert pending(db) == []
    assert check(db)[0] == {}
    assert visible(db) == newer


def test_passages_a_repair_removed_are_never_switched_in(
    falkordb_server: FalkorServer, corpus: tuple[Path, Path]
) -> None:
    """A writer taken for dead (here: its passages deleted under it, as a repair does) must not
    switch in a version missing passages: its switch refuses, and the ingest writes the documents
    again (a failed write is retried), whole."""
    before_docs, after_docs = corpus
    reference = falkordb_server.url("removed_reference")
    ingest(reference, before_docs)
    Child(reference, after_docs, 0).finish()
    db = falkordb_server.url("removed_under")
    ingest(db, before_docs)
    child = Child(db, after_docs, "switch")
    assert child.stopped()

    async def remove() -> None:
        async with KnowledgeBase(db) as kb:
            await kb.open()
            store = kb.store
            assert isinstance(store, FalkorStore)
            store.conn.write_sync("MATCH (c:PendingChunk) DETACH DELETE c")

    asyncio.run(remove())
    child.finish()
    assert check(db)[0] == {}
    assert visible(db) == visible(reference)


def _rewrite(folder: Path) -> None:
    for path in folder.iterdir():
        path.write_text(path.read_text(encoding="utf-8") + "\nIt rained in London.\n", encoding="utf-8")


def _leases(db: str) -> list[str]:
    async def run() -> list[str]:
        async with KnowledgeBase(db, read_only=True) as kb:
            await kb.open()
            store = kb.store
            assert isinstance(store, FalkorStore)
            return sorted(lease_key(store.conn.graph_name, t) for t in live_writers(store.conn))

    return asyncio.run(run())


def _ttl_renewed(db: str, key: str) -> bool:
    """Whether the lease's time to live goes back up (it is renewed) within a few renewals."""
    from evigraph.store.falkordb.connection import Connection
    from evigraph.store.location import StoreLocation

    conn = Connection(StoreLocation.parse(db), read_only=True)  # finds the local server's password
    conn.open()
    try:
        first = int(conn.command("PTTL", key))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if int(conn.command("PTTL", key)) > first:
                return True
            time.sleep(0.05)
        return False
    finally:
        conn.close()


def test_ctrl_c_during_a_write_keeps_what_the_client_says(
    falkordb_server: FalkorServer, corpus: tuple[Path, Path]
) -> None:
    """Ctrl-C while a write is under way: the client says the step in progress ends and what is
    written is kept; after it stops, the batch is switched in whole and `check` is clean at once."""
    before_docs, after_docs = corpus
    reference = falkordb_server.url("ctrl_c_reference")
    ingest(reference, before_docs)
    Child(reference, after_docs, 0).finish()
    db = falkordb_server.url("ctrl_c")
    ingest(db, before_docs)
    child = Child(db, after_docs, "switch")
    assert child.stopped()
    os.kill(child.proc.pid, signal.SIGINT)
    _, err = child.proc.communicate("go\n", timeout=300)
    assert "stopping after the step in progress" in err and "documents already written are kept" in err, err
    assert pending(db) == [] and check(db)[0] == {}
    assert visible(db) == visible(reference)
