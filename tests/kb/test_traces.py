"""`kb.traces(project, agent)`: tasks, events and steps checked against their bounds and kept per project."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from evigraph import ConfigurationError, KnowledgeBase
from evigraph.errors import RequestConflictError, TaskExistsError, TaskNotFoundError
from evigraph.kb import Traces
from evigraph.trace_records import STORED_EVENT_CHARS


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        yield kb


@pytest.fixture
async def traces(kb: KnowledgeBase) -> Traces:
    found = kb.traces("harbor", "analyst")
    await found.create_task("funding", "Find who funds ReefWatch")
    return found


async def test_the_same_task_is_returned_and_another_goal_is_task_exists(traces: Traces) -> None:
    first = await traces.get_task("funding")
    assert await traces.create_task("funding", "Find who funds ReefWatch") == first
    with pytest.raises(TaskExistsError, match="task_exists") as info:
        await traces.create_task("funding", "Something else")
    assert info.value.code == "task_exists"
    assert (await traces.get_task("funding")).goal == "Find who funds ReefWatch"


async def test_a_long_payload_is_stored_cut_with_the_full_hash_and_a_flag(traces: Traces) -> None:
    payload = "é" * (STORED_EVENT_CHARS + 5)
    event = await traces.record_event("funding", "tool_result", payload, role="tool", name="search_evidence")
    assert (event.chars, event.truncated) == (STORED_EVENT_CHARS + 5, True)
    assert event.sha256 == hashlib.sha256(payload.encode()).hexdigest()
    body = await traces.fetch_event("funding", event.seq)
    assert body.payload == payload[:STORED_EVENT_CHARS] and body.truncated
    short = await traces.record_event("funding", "message", "Who funds it?", role="user")
    assert not short.truncated and (await traces.fetch_event("funding", short.seq)).payload == "Who funds it?"


async def test_events_are_paged_by_sequence_number(traces: Traces) -> None:
    for i in range(5):
        await traces.record_event("funding", "note", f"n{i}")
    page = await traces.list_events("funding", limit=2)
    assert [e.seq for e in page.events] == [1, 2] and page.next_after_seq == 2
    page = await traces.list_events("funding", after_seq=page.next_after_seq, limit=2)
    assert [e.seq for e in page.events] == [3, 4] and page.next_after_seq == 4
    page = await traces.list_events("funding", after_seq=4, limit=2)
    assert [e.seq for e in page.events] == [5] and page.next_after_seq is None
    assert (await traces.get_task("funding")).events == 5


async def test_step_states_and_results(traces: Traces) -> None:
    with pytest.raises(ConfigurationError, match="a completed step needs its result"):
        await traces.set_step("funding", "read sources", "completed")
    with pytest.raises(ConfigurationError, match="not both"):
        await traces.set_step("funding", "read sources", "completed", result="x", result_event_seq=1)
    with pytest.raises(ConfigurationError, match="state"):
        await traces.set_step("funding", "read sources", "done")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=f"result: String should have at most {STORED_EVENT_CHARS}"):
        await traces.set_step("funding", "read sources", "completed", result="x" * (STORED_EVENT_CHARS + 1))
    assert (await traces.list_events("funding")).events == []  # nothing refused was written

    started = await traces.set_step("funding", "read sources", "in_progress", kind="read")
    assert started.state == "in_progress" and started.result_event_seq is None
    done = await traces.set_step("funding", "read sources", "completed", result="Two grants found.")
    assert done.state == "completed" and done.result_event_seq == 1
    note = await traces.fetch_event("funding", 1)
    assert (note.kind, note.name, note.payload) == ("note", "read sources", "Two grants found.")
    event = await traces.record_event("funding", "note", "analysis written")
    await traces.set_step("funding", "analyse", "completed", result_event_seq=event.seq, result_basis="independent")
    await traces.set_step("funding", "write up", "failed")
    await traces.set_step("funding", "review", "not_started")

    page = await traces.list_steps("funding", "completed", limit=1)
    assert [s.name for s in page.steps] == ["analyse"] and page.next_after_name == "analyse"
    page = await traces.list_steps("funding", "completed", after_name="analyse", limit=1)
    assert [s.name for s in page.steps] == ["read sources"] and page.next_after_name is None
    assert [s.name for s in (await traces.list_steps("funding", "failed")).steps] == ["write up"]
    assert (await traces.list_steps("funding", "in_progress")).steps == []
    with pytest.raises(TaskNotFoundError, match="no event 99"):
        await traces.set_step("funding", "cite", "completed", result_event_seq=99)


async def test_a_retried_request_returns_the_saved_result_and_writes_nothing(traces: Traces) -> None:
    first = await traces.record_event("funding", "message", "hello", request_id="req-1")
    again = await traces.record_event("funding", "message", "hello", request_id="req-1")
    assert again == first
    assert [e.seq for e in (await traces.list_events("funding")).events] == [1]

    step = await traces.set_step("funding", "s", "completed", result="r", request_id="req-2")
    assert await traces.set_step("funding", "s", "completed", result="r", request_id="req-2") == step
    assert [e.seq for e in (await traces.list_events("funding")).events] == [1, 2]

    task = await traces.create_task("second", "goal", request_id="req-3")
    assert await traces.create_task("second", "goal", request_id="req-3") == task


async def test_a_request_id_reused_for_another_write_is_refused(kb: KnowledgeBase, traces: Traces) -> None:
    await traces.record_event("funding", "message", "hello", request_id="req-1")
    with pytest.raises(RequestConflictError, match="req-1"):
        await traces.record_event("funding", "message", "hello again", request_id="req-1")
    with pytest.raises(RequestConflictError):
        await traces.set_step("funding", "s", "in_progress", request_id="req-1")
    with pytest.raises(RequestConflictError):  # the agent is part of the request
        await kb.traces("harbor", "someone else").record_event("funding", "message", "hello", request_id="req-1")
    assert [e.seq for e in (await traces.list_events("funding")).events] == [1]
    assert (await traces.list_steps("funding", "in_progress")).steps == []


@pytest.mark.parametrize(
    ("call", "bound"),
    [
        (lambda t: t.create_task("x" * 201, "g"), "task_name: String should have at most 200 characters"),
        (lambda t: t.create_task("", "g"), "task_name: String should have at least 1 character"),
        (lambda t: t.create_task("t", "g" * 4001), "goal: String should have at most 4000 characters"),
        (lambda t: t.create_task("t", "g", request_id="r" * 65), "request_id: String should have at most 64"),
        (lambda t: t.create_task("t", "g", request_id=""), "request_id: String should have at least 1"),
        (
            lambda t: t.record_event("funding", "note", "p" * 1_000_001),
            "payload: String should have at most 1000000 characters",
        ),
        (lambda t: t.record_event("funding", "chat", "p"), "kind: Input should be 'message', 'tool_call'"),
        (lambda t: t.record_event("funding", "note", "p", role="r" * 101), "role: String should have at most 100"),
        (lambda t: t.record_event("funding", "note", "p", name="n" * 201), "name: String should have at most 200"),
        (lambda t: t.list_events("funding", after_seq=-1), "after_seq: Input should be greater than or equal to 0"),
        (lambda t: t.list_events("funding", limit=201), "limit: Input should be less than or equal to 200"),
        (lambda t: t.list_events("funding", limit=0), "limit: Input should be greater than or equal to 1"),
        (lambda t: t.fetch_event("funding", 0), "seq: Input should be greater than or equal to 1"),
        (lambda t: t.set_step("funding", "n" * 201, "failed"), "name: String should have at most 200"),
        (lambda t: t.set_step("funding", "s", "failed", kind="write"), "kind: Input should be 'read'"),
        (lambda t: t.set_step("funding", "s", "failed", result_basis="x"), "result_basis: Input should be"),
        (lambda t: t.set_step("funding", "s", "completed", result_event_seq=0), "result_event_seq: Input should be"),
        (lambda t: t.list_steps("funding", "failed", after_name="a" * 201), "after_name: String should have at most"),
        (lambda t: t.list_steps("funding", "failed", limit=201), "limit: Input should be less than or equal to 200"),
        (lambda t: t.create_task("t\ud800", "g"), "lone surrogate"),
    ],
)
async def test_bounds_are_refused_by_name(traces: Traces, call: Any, bound: str) -> None:
    with pytest.raises(ConfigurationError, match=bound.replace("(", r"\(")):
        await call(traces)


def test_the_project_and_agent_are_bounded(kb: KnowledgeBase) -> None:
    with pytest.raises(ConfigurationError, match="project: String should have at least 1"):
        kb.traces("", "analyst")
    with pytest.raises(ConfigurationError, match="agent: String should have at most 200"):
        kb.traces("harbor", "a" * 201)


async def test_another_projects_tasks_are_invisible(kb: KnowledgeBase, traces: Traces) -> None:
    await traces.record_event("funding", "note", "private")
    other = kb.traces("elsewhere", "analyst")
    with pytest.raises(TaskNotFoundError):
        await other.get_task("funding")
    with pytest.raises(TaskNotFoundError):
        await other.list_events("funding")
    with pytest.raises(TaskNotFoundError):
        await other.fetch_event("funding", 1)
    with pytest.raises(TaskNotFoundError):
        await other.record_event("funding", "note", "x")
    made = await other.create_task("funding", "A different goal")  # the name is free in this project
    assert made.events == 0 and (await traces.get_task("funding")).events == 1


async def test_traces_outlive_the_session(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        traces = kb.traces("p", "a")
        await traces.create_task("t", "g")
        await traces.set_step("t", "s", "completed", result="done")
    async with KnowledgeBase(tmp_path / "kb.db", read_only=True) as kb:
        traces = kb.traces("p", "a")
        assert (await traces.get_task("t")).events == 1
        assert [s.name for s in (await traces.list_steps("t", "completed")).steps] == ["s"]
        with pytest.raises(ConfigurationError, match="read-only"):
            await traces.record_event("t", "note", "x")
