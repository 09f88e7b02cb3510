"""Trace records of the store contract: tasks, events and steps per project, each write atomic and replayable."""

from __future__ import annotations

import pytest
from tests.store.contract.conftest import ALPHA, StoreFactory, covers
from tests.store.contract.test_contract_decisions import ALPHA_V2, cites, decision, passage, setup

from evigraph.errors import (
    DecisionNotFoundError,
    DecisionStateError,
    RequestConflictError,
    StaleEvidenceError,
    TaskExistsError,
    TaskNotFoundError,
)
from evigraph.store import GraphStore
from evigraph.trace_records import NewEvent, NewStep, TraceRequest

MISSING = "00000000-0000-4000-8000-000000000000"


def note(text: str) -> NewEvent:
    return NewEvent(kind="note", payload=text, chars=len(text), sha256="h" + text, truncated=False)


@covers("create_task", "get_task")
async def test_a_task_is_created_once_and_kept_per_project(factory: StoreFactory, location: str) -> None:
    async with factory.connect(location) as store:
        assert await store.get_task("p", "t") is None
        made = await store.create_task("p", "ann", "t", "find the funders")
        assert (made.name, made.goal, made.agent, made.events) == ("t", "find the funders", "ann", 0)
        again = await store.create_task("p", "bob", "t", "find the funders")
        assert again == made
        with pytest.raises(TaskExistsError, match="task_exists"):
            await store.create_task("p", "ann", "t", "another goal")
        await store.create_task("q", "ann", "t", "another goal")
    async with factory.connect(location, read_only=True) as reopened:
        assert await reopened.get_task("p", "t") == made
        found = await reopened.get_task("q", "t")
        assert found is not None and found.goal == "another goal"
        assert await reopened.get_task("r", "t") is None


@covers("list_tasks")
async def test_tasks_are_listed_per_project_by_name(store: GraphStore) -> None:
    assert await store.list_tasks("p") == []
    for name in ("b", "a", "c"):
        await store.create_task("p", "ann", name, f"goal {name}")
    await store.create_task("q", "ann", "z", "elsewhere")
    assert [t.name for t in await store.list_tasks("p")] == ["a", "b", "c"]
    assert [t.name for t in await store.list_tasks("p", "a", 1)] == ["b"]
    assert [t.goal for t in await store.list_tasks("q")] == ["elsewhere"]


@covers("record_event", "list_events", "fetch_event")
async def test_events_are_numbered_per_task_and_listed_after_a_number(store: GraphStore) -> None:
    await store.create_task("p", "ann", "t", "g")
    await store.create_task("p", "ann", "u", "g")
    cut = NewEvent(
        kind="tool_result", payload="x" * 10, chars=50, sha256="full", truncated=True, role="tool", name="search"
    )
    first = await store.record_event("p", "ann", "t", note("one"))
    second = await store.record_event("p", "bob", "t", cut)
    other = await store.record_event("p", "ann", "u", note("elsewhere"))
    assert (first.seq, second.seq, other.seq) == (1, 2, 1)
    assert (second.kind, second.role, second.name, second.agent) == ("tool_result", "tool", "search", "bob")
    assert (second.chars, second.sha256, second.truncated) == (50, "full", True)
    assert [e.seq for e in await store.list_events("p", "t")] == [1, 2]
    assert [e.seq for e in await store.list_events("p", "t", after_seq=1)] == [2]
    assert [e.seq for e in await store.list_events("p", "t", limit=1)] == [1]
    assert await store.list_events("p", "t", after_seq=2) == []
    fetched = await store.fetch_event("p", "t", 2)
    assert fetched is not None and fetched.payload == "x" * 10 and fetched.seq == 2
    assert await store.fetch_event("p", "t", 3) is None
    task = await store.get_task("p", "t")
    assert task is not None and task.events == 2
    for call in (
        store.record_event("p", "ann", "missing", note("x")),
        store.list_events("q", "t"),
        store.fetch_event("q", "t", 1),
    ):
        with pytest.raises(TaskNotFoundError):
            await call


@covers("set_step", "list_steps")
async def test_steps_are_replaced_by_name_and_paged_by_state(store: GraphStore) -> None:
    await store.create_task("p", "ann", "t", "g")
    started = await store.set_step("p", "ann", "t", NewStep(name="b", state="in_progress", kind="read"))
    assert (started.state, started.kind, started.result_event_seq, started.agent) == (
        "in_progress",
        "read",
        None,
        "ann",
    )
    done = await store.set_step(
        "p", "bob", "t", NewStep(name="b", state="completed", result_basis="supported"), note("the result")
    )
    assert (done.state, done.result_event_seq, done.result_basis, done.agent) == ("completed", 1, "supported", "bob")
    result = await store.fetch_event("p", "t", 1)
    assert result is not None and result.payload == "the result"
    await store.set_step("p", "ann", "t", NewStep(name="a", state="completed", result_event_seq=1))
    await store.set_step("p", "ann", "t", NewStep(name="c", state="completed", result_event_seq=1))
    assert [s.name for s in await store.list_steps("p", "t", "completed")] == ["a", "b", "c"]
    assert [s.name for s in await store.list_steps("p", "t", "completed", after_name="a", limit=1)] == ["b"]
    assert await store.list_steps("p", "t", "in_progress") == []
    with pytest.raises(TaskNotFoundError, match="no event 9"):
        await store.set_step("p", "ann", "t", NewStep(name="d", state="completed", result_event_seq=9))
    with pytest.raises(TaskNotFoundError):
        await store.list_steps("q", "t", "completed")


@covers("create_task", "record_event", "set_step")
async def test_a_saved_request_answers_its_retry_and_refuses_another_write(store: GraphStore) -> None:
    asked = TraceRequest("r1", "fp-task")
    made = await store.create_task("p", "ann", "t", "g", asked)
    assert await store.create_task("p", "ann", "t", "g", asked) == made
    event = await store.record_event("p", "ann", "t", note("once"), TraceRequest("r2", "fp-event"))
    assert await store.record_event("p", "ann", "t", note("once"), TraceRequest("r2", "fp-event")) == event
    assert [e.seq for e in await store.list_events("p", "t")] == [1]
    with pytest.raises(RequestConflictError, match="r2"):
        await store.record_event("p", "ann", "t", note("twice"), TraceRequest("r2", "fp-other"))
    step = NewStep(name="s", state="completed")
    set_once = await store.set_step("p", "ann", "t", step, note("result"), TraceRequest("r3", "fp-step"))
    assert await store.set_step("p", "ann", "t", step, note("result"), TraceRequest("r3", "fp-step")) == set_once
    assert [e.seq for e in await store.list_events("p", "t")] == [1, 2]
    # A request id belongs to its project: another project's same id is a new request.
    await store.create_task("q", "ann", "t", "g", TraceRequest("r2", "fp-elsewhere"))


@covers("record_event", "set_step")
async def test_a_refused_write_leaves_nothing(store: GraphStore) -> None:
    await store.create_task("p", "ann", "t", "g")
    await store.record_event("p", "ann", "t", note("one"), TraceRequest("r", "fp"))
    with pytest.raises(RequestConflictError):
        await store.set_step(
            "p", "ann", "t", NewStep(name="s", state="completed"), note("result"), TraceRequest("r", "other")
        )
    assert [e.seq for e in await store.list_events("p", "t")] == [1]
    assert await store.list_steps("p", "t", "completed") == []
    with pytest.raises(TaskExistsError):
        await store.create_task("p", "ann", "t", "other goal", TraceRequest("fresh", "fp"))
    await store.create_task("p", "ann", "u", "g", TraceRequest("fresh", "fp2"))  # the refusal saved no request


async def test_traces_are_no_part_of_the_graph(store: GraphStore) -> None:
    await store.create_task("p", "ann", "t", "g")
    await store.record_event("p", "ann", "t", note("one"), TraceRequest("r", "fp"))
    await store.set_step("p", "ann", "t", NewStep(name="s", state="in_progress"))
    assert (await store.counts()).documents == 0
    assert not {t.name for t in await store.schema_tables()} & {"TraceTask", "TraceEvent", "TraceStep", "TraceRequest"}


@covers("set_step", "list_steps")
async def test_a_steps_supports_are_checked_pinned_and_replaced_as_a_decisions_are(store: GraphStore) -> None:
    await setup(store)
    read = await passage(store, ALPHA.key, 1, note="who designed it")
    standing = await store.record_decision("p", "ann", decision(read))
    step = NewStep(name="s", state="completed", result_basis="supported", supports=(read, cites(standing.id)))
    done = await store.set_step("p", "ann", "t", step, note("the result"))
    alpha = (await store.get_documents([ALPHA.key]))[ALPHA.key]
    pinned = read.model_copy(update={"content_hash": alpha.content_hash})
    assert done.supports == (pinned, cites(standing.id))
    [listed] = await store.list_steps("p", "t", "completed")
    assert listed == done

    await store.write_versions([ALPHA_V2])  # the passage read is now of an old version
    with pytest.raises(StaleEvidenceError, match=f"version {read.version} of 'team/alpha'"):
        await store.set_step("p", "ann", "t", NewStep(name="s", state="failed", supports=(read,)))
    with pytest.raises(DecisionNotFoundError):
        await store.set_step("p", "ann", "t", NewStep(name="s", state="failed", supports=(cites(MISSING),)))
    superseding = decision(await passage(store, ALPHA.key), supersedes=standing.id)
    await store.record_decision("p", "ann", superseding)
    with pytest.raises(DecisionStateError, match="a step can only rest on an active one"):
        await store.set_step("p", "ann", "t", NewStep(name="s", state="failed", supports=(cites(standing.id),)))
    assert await store.list_steps("p", "t", "completed") == [done]  # the refused writes changed nothing

    cleared = await store.set_step("p", "bob", "t", NewStep(name="s", state="in_progress"))
    assert cleared.supports == ()
    assert (await store.list_steps("p", "t", "in_progress"))[0].supports == ()
