"""The FalkorDB trace and decision mixins on a real server, before `FalkorStore` can be built."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from evigraph.errors import (
    DecisionStateError,
    RequestConflictError,
    StaleEvidenceError,
    StoreError,
    TaskExistsError,
    TaskNotFoundError,
)
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.decisions import FalkorDecisionOps
from evigraph.store.falkordb.locks import project_locks
from evigraph.store.location import StoreLocation
from evigraph.trace_records import NewDecision, NewEvent, NewStep, NewSupport, TraceRequest


class Harness(FalkorDecisionOps):
    def __init__(self, conn: Connection, read_only: bool = False) -> None:
        self._c = conn
        self.read_only = read_only

    @property
    def conn(self) -> Connection:
        return self._c


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from evigraph.store.falkordb.server import LocalServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = LocalServer(tmp_path_factory.mktemp("falkordb_traces"), port=port, host="127.0.0.1")
    server.start(persist=False)
    try:
        yield f"falkordb://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def harness(server_url: str, tmp_path: Path) -> Iterator[Harness]:
    conn = Connection(StoreLocation.parse(f"{server_url}/t_{tmp_path.name}".replace("-", "_")), read_only=False)
    conn.open()
    conn.write_sync("CREATE (:EvigraphMeta {key: 'app', value: 'evigraph'})")
    try:
        yield Harness(conn)
    finally:
        conn.close()


def note(text: str) -> NewEvent:
    return NewEvent(kind="note", payload=text, chars=len(text), sha256="h", truncated=False)


def doc(h: Harness, key: str, version: int) -> None:
    h.conn.write_sync(
        "MERGE (d:Document {key: $k}) SET d.version = $v, d.content_hash = $h",
        {"k": key, "v": version, "h": f"h{version}"},
    )


def passage(key: str, version: int) -> NewSupport:
    return NewSupport(kind="passage", ref=f"passage:{key}{version}", document=key, version=version)


async def test_tasks_events_and_steps(harness: Harness) -> None:
    h = harness
    assert await h.get_task("p", "t") is None
    assert await h.list_tasks("p") == []
    made = await h.create_task("p", "ann", "t", "g", TraceRequest("r1", "f1"))
    assert await h.create_task("p", "ann", "t", "g", TraceRequest("r1", "f1")) == made
    assert await h.get_task("p", "t") == made
    with pytest.raises(TaskExistsError):
        await h.create_task("p", "ann", "t", "other")
    weird = 'quote " \' back \\ new\nline é ["p"]'
    first = await h.record_event("p", "ann", "t", note(weird), TraceRequest("r2", "f2"))
    assert await h.record_event("p", "ann", "t", note(weird), TraceRequest("r2", "f2")) == first
    with pytest.raises(RequestConflictError):
        await h.record_event("p", "ann", "t", note("x"), TraceRequest("r2", "other"))
    assert await h.list_events("p", "t") == [first]
    fetched = await h.fetch_event("p", "t", 1)
    assert fetched is not None and fetched.payload == weird and fetched.at == first.at
    step = await h.set_step("p", "bob", "t", NewStep(name="s", state="completed"), note("r"))
    assert step.result_event_seq == 2
    assert await h.list_steps("p", "t", "completed") == [step]
    with pytest.raises(TaskNotFoundError, match="no event 7"):
        await h.set_step("p", "bob", "t", NewStep(name="s", state="completed", result_event_seq=7))
    task = await h.get_task("p", "t")
    assert task is not None and task.events == 2


async def test_decisions_flags_and_review(harness: Harness) -> None:
    h = harness
    doc(h, "a", 1)
    await h.create_task("p", "ann", "t", "g")
    first = await h.record_decision(
        "p", "ann", NewDecision(task="t", choice_key="k", conclusion="c", rationale="r", supports=(passage("a", 1),))
    )
    assert await h.get_decisions("p", [first.id]) == [first]
    assert first.supports[0].content_hash == "h1"
    second = await h.record_decision(
        "p",
        "ann",
        NewDecision(
            task="t",
            choice_key="k",
            conclusion="d",
            rationale="r",
            supports=(NewSupport(kind="decision", ref=first.id),),
            vector=(0.5, -0.25, 1.0),
        ),
        TraceRequest("d", "f"),
    )
    assert await h.get_decisions("p", [second.id]) == [second]
    assert [sorted(d.id for d in g) for g in await h.list_conflicts("p")] == [sorted([first.id, second.id])]
    doc(h, "a", 2)
    with pytest.raises(StaleEvidenceError):
        await h.record_decision(
            "p",
            "ann",
            NewDecision(task="t", choice_key="k", conclusion="c", rationale="r", supports=(passage("a", 1),)),
        )
    h.flag_documents({"a": 2})
    [flagged] = await h.get_decisions("p", [first.id])
    assert flagged.state == "needs_review" and flagged.review[0].now_version == 2
    progress = await h.continue_decision_review("p")
    assert (progress.processed, progress.flagged, progress.remaining) == (1, [second.id], 1)
    progress = await h.continue_decision_review()
    assert (progress.processed, progress.flagged, progress.remaining) == (1, [], 0)
    with pytest.raises(DecisionStateError):
        await h.reaffirm_decision("p", "ann", second.id, [], "again")
    again = await h.reaffirm_decision("p", "ann", first.id, [passage("a", 2)], "fresh")
    assert await h.get_decisions("p", [first.id]) == [again]
    assert [s.ordinal for s in again.supports] == [1]
    assert [s.current for s in await h.list_support_history("p", first.id)] == [False, True]
    rejected = await h.reject_decision("p", "ann", first.id, "no")
    assert await h.get_decisions("p", [first.id]) == [rejected]
    assert [d.id for d in await h.list_decisions("p", after_id=first.id)] == [second.id]
    texts = {t.id: t.vector for t in await h.decision_texts("p", ["needs_review", "rejected"])}
    assert texts == {first.id: None, second.id: (0.5, -0.25, 1.0)}


async def test_a_read_only_harness_reads_nothing_and_writes_nothing(server_url: str, tmp_path: Path) -> None:
    conn = Connection(StoreLocation.parse(f"{server_url}/ro_{tmp_path.name}".replace("-", "_")), read_only=False)
    conn.open()
    conn.write_sync("CREATE (:EvigraphMeta {key: 'app'})")
    h = Harness(conn, read_only=True)
    try:
        assert await h.list_decisions("p") == [] and await h.get_task("p", "t") is None
        assert await h.decision_texts("p", ["active"]) == [] and await h.list_conflicts("p") == []
        with pytest.raises(StoreError, match="read-only"):
            await h.create_task("p", "a", "t", "g")
        with pytest.raises(StoreError, match="read-only"):
            await h.continue_decision_review()
    finally:
        conn.close()


def test_a_held_project_lock_makes_another_writer_wait_then_give_up(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evigraph.store.falkordb.locks as locks

    monkeypatch.setattr(locks, "LOCK_WAIT_S", 0.2)
    with (
        project_locks(harness.conn, ["p"]),
        pytest.raises(StoreError, match="stayed taken"),
        project_locks(harness.conn, ["p"]),
    ):
        pass
    with project_locks(harness.conn, ["p"]):  # released
        pass


async def test_concurrent_writers_of_one_task_never_share_an_event_number(harness: Harness, server_url: str) -> None:
    import asyncio

    await harness.create_task("p", "ann", "t", "g")
    other = Connection(harness.conn.location, read_only=False)
    other.open()
    try:
        writers = [harness, Harness(other)]
        made = await asyncio.gather(*(writers[i % 2].record_event("p", "ann", "t", note(str(i))) for i in range(40)))
        assert sorted(e.seq for e in made) == list(range(1, 41))
        assert [e.seq for e in await harness.list_events("p", "t", limit=100)] == list(range(1, 41))
    finally:
        other.close()


async def test_a_document_switched_between_check_and_write_refuses_the_decision(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evigraph.store.core.decision_writes as decision_writes

    h = harness
    doc(h, "a", 1)
    await h.create_task("p", "ann", "t", "g")
    checked = decision_writes.new_supports

    def switched(*args: object, **kwargs: object) -> object:
        doc(h, "a", 2)  # another writer's switch, after the check
        return checked(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(decision_writes, "new_supports", switched)
    with pytest.raises(StaleEvidenceError, match="version 2"):
        await h.record_decision(
            "p",
            "ann",
            NewDecision(task="t", choice_key="k", conclusion="c", rationale="r", supports=(passage("a", 1),)),
            TraceRequest("x", "f"),
        )
    assert await h.list_decisions("p") == []
    rows = h.conn.read_sync("MATCH (n) WHERE n:TraceSupport OR n:TraceRequest RETURN count(n) AS n")
    assert rows[0]["n"] == 0
