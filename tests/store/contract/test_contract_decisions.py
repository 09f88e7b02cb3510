"""Decisions of the store contract: conclusions resting on passages and on other decisions, per
project, refused on stale evidence, flagged when a document they rest on changes."""

from __future__ import annotations

from typing import Any

import pytest
from tests.store.contract.conftest import ALPHA, BETA, StoreFactory, covers, version

from evigraph.errors import (
    DecisionNotFoundError,
    DecisionStateError,
    RequestConflictError,
    StaleEvidenceError,
    StoreError,
    TaskNotFoundError,
)
from evigraph.store import GraphStore
from evigraph.trace_records import DecisionRecord, NewDecision, NewSupport, ReviewCause, TraceRequest

ALPHA_V2 = version(
    ALPHA.key,
    ["Ada Lovelace wrote notes on the engine in Marlow."],
    [[("Ada Lovelace", "Person"), ("Marlow", "Location")]],
)
ALPHA_V3 = version(ALPHA.key, ["Ada Lovelace left Marlow."], [[("Ada Lovelace", "Person"), ("Marlow", "Location")]])


async def passage(store: GraphStore, key: str, index: int = 0, note: str | None = None) -> NewSupport:
    """A support on passage `index` of the document's current version, as the knowledge base resolves it."""
    doc = (await store.get_documents([key]))[key]
    chunk = (await store.document_passages(key))[index]
    return NewSupport(kind="passage", ref=f"passage:{chunk.id}", document=key, version=doc.version, note=note)


def cites(decision_id: str) -> NewSupport:
    return NewSupport(kind="decision", ref=decision_id)


def decision(*supports: NewSupport, task: str = "t", **fields: Any) -> NewDecision:
    values: dict[str, Any] = {"choice_key": "db", "conclusion": "kuzu", "rationale": "it embeds", **fields}
    return NewDecision(task=task, supports=supports, **values)


def causes(found: DecisionRecord) -> list[dict[str, Any]]:
    """Its review causes without their times."""
    return [c.model_dump(exclude={"at"}) for c in found.review]


def cause(change: str, **fields: Any) -> dict[str, Any]:
    return ReviewCause.model_validate({"change": change, "at": "2000-01-01T00:00:00Z", **fields}).model_dump(
        exclude={"at"}
    )


async def one(store: GraphStore, project: str, decision_id: str) -> DecisionRecord:
    [found] = await store.get_decisions(project, [decision_id])
    return found


async def setup(store: GraphStore, *projects: str) -> None:
    await store.write_versions([ALPHA, BETA])
    for project in projects or ("p",):
        await store.create_task(project, "ann", "t", "choose a database")


@covers("record_decision", "get_decisions")
async def test_a_decision_is_recorded_active_on_its_supports(store: GraphStore) -> None:
    await setup(store, "p", "q")
    alpha = (await store.get_documents([ALPHA.key]))[ALPHA.key]
    first = await store.record_decision(
        "p",
        "ann",
        decision(
            await passage(store, ALPHA.key, 0, note="they met"),
            await passage(store, ALPHA.key, 1),
            assumptions=("small data",),
            open_questions=("does it scale?",),
        ),
    )
    assert (first.task, first.choice_key, first.conclusion, first.rationale) == ("t", "db", "kuzu", "it embeds")
    assert (first.state, first.agent, first.review, first.supersedes, first.superseded_by) == (
        "active",
        "ann",
        [],
        None,
        None,
    )
    assert (first.assumptions, first.open_questions) == (["small data"], ["does it scale?"])
    assert [(s.ordinal, s.kind, s.origin, s.current, s.agent) for s in first.supports] == [
        (0, "passage", "recorded", True, "ann"),
        (1, "passage", "recorded", True, "ann"),
    ]
    assert {(s.document, s.version, s.content_hash) for s in first.supports} == {(ALPHA.key, 1, alpha.content_hash)}
    assert [s.note for s in first.supports] == ["they met", None]
    second = await store.record_decision(
        "p", "bob", decision(cites(first.id), await passage(store, BETA.key), choice_key="lang")
    )
    assert [(s.ordinal, s.kind, s.ref, s.content_hash) for s in second.supports] == [
        (0, "decision", first.id, None),
        (1, "passage", second.supports[1].ref, (await store.get_documents([BETA.key]))[BETA.key].content_hash),
    ]
    assert second.agent == "bob" and second.id != first.id
    assert await store.get_decisions("p", [second.id, "missing", first.id]) == [second, first]
    assert await store.get_decisions("p", [first.id]) == [first]
    assert await store.get_decisions("p", []) == []
    assert await store.get_decisions("q", [first.id, second.id]) == []
    assert await store.list_decisions("q") == []


@covers("record_decision")
async def test_a_retried_decision_request_is_answered_once(store: GraphStore) -> None:
    await setup(store)
    support = await passage(store, ALPHA.key)
    asked = TraceRequest("r1", "fp-decision")
    made = await store.record_decision("p", "ann", decision(support), asked)
    assert await store.record_decision("p", "ann", decision(support), asked) == made
    assert [d.id for d in await store.list_decisions("p")] == [made.id]
    assert [s.ordinal for s in await store.list_support_history("p", made.id)] == [0]
    with pytest.raises(RequestConflictError, match="r1"):
        await store.record_decision("p", "ann", decision(support, conclusion="sqlite"), TraceRequest("r1", "other"))
    assert [d.id for d in await store.list_decisions("p")] == [made.id]
    rejected = await store.reject_decision("p", "ann", made.id, "wrong", TraceRequest("r2", "fp-reject"))
    assert await store.reject_decision("p", "ann", made.id, "wrong", TraceRequest("r2", "fp-reject")) == rejected
    assert rejected.state == "rejected"


@covers("record_decision")
async def test_a_decision_on_what_is_not_there_is_refused(store: GraphStore) -> None:
    await setup(store, "p", "q")
    old_alpha = await passage(store, ALPHA.key)
    old_beta = await passage(store, BETA.key)
    with pytest.raises(TaskNotFoundError):
        await store.record_decision("p", "ann", decision(old_alpha, task="missing"))
    await store.write_versions([ALPHA_V2])
    assert await store.delete_document(BETA.key)
    asked = TraceRequest("r", "fp")
    with pytest.raises(StaleEvidenceError, match="version 2"):
        await store.record_decision("p", "ann", decision(old_alpha), asked)
    with pytest.raises(StaleEvidenceError, match="deleted"):
        await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key), old_beta))
    with pytest.raises(StaleEvidenceError):  # a version the document never had
        await store.record_decision("p", "ann", decision(old_alpha.model_copy(update={"version": 3})))
    with pytest.raises(DecisionNotFoundError):
        await store.record_decision("p", "ann", decision(cites("missing")))
    assert await store.list_decisions("p") == []
    assert await store.list_decisions("p", states=["active", "needs_review", "superseded", "rejected"]) == []
    made = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)), asked)  # nothing saved
    with pytest.raises(DecisionNotFoundError):  # a decision of another project is not there
        await store.record_decision("q", "ann", decision(cites(made.id)))
    assert await store.list_decisions("q") == []
    await store.reject_decision("p", "ann", made.id, "wrong")
    with pytest.raises(DecisionStateError, match="rejected"):
        await store.record_decision("p", "ann", decision(cites(made.id)))
    flagged = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    await store.write_versions([ALPHA_V3])
    assert (await one(store, "p", flagged.id)).state == "needs_review"
    with pytest.raises(DecisionStateError, match="needs_review"):
        await store.record_decision("p", "ann", decision(cites(flagged.id)))
    assert [d.id for d in await store.list_decisions("p")] == [made.id, flagged.id]


@covers("record_decision", "reaffirm_decision", "delete_document", "write_versions")
async def test_evidence_read_before_a_delete_is_stale_once_the_key_is_ingested_again(store: GraphStore) -> None:
    await setup(store)
    read = await passage(store, ALPHA.key)
    kept = await store.record_decision("p", "ann", decision(read))
    assert await store.delete_document(ALPHA.key)
    await store.write_versions([ALPHA_V3])  # other text under the same key
    with pytest.raises(StaleEvidenceError, match="is now at version 2"):
        await store.record_decision("p", "ann", decision(read, choice_key="again"))
    with pytest.raises(StaleEvidenceError, match="is now at version 2"):
        await store.reaffirm_decision("p", "ann", kept.id, [read], "still true")
    assert [d.id for d in await store.list_decisions("p")] == [kept.id]
    assert (await one(store, "p", kept.id)).state == "needs_review"


@covers("record_decision", "write_versions", "delete_document")
async def test_a_changed_document_flags_the_decisions_resting_on_it_in_the_same_call(store: GraphStore) -> None:
    await setup(store)
    on_alpha = await store.record_decision(
        "p", "ann", decision(await passage(store, ALPHA.key, 0), await passage(store, ALPHA.key, 1))
    )
    on_beta = await store.record_decision("p", "ann", decision(await passage(store, BETA.key)))
    rejected = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    await store.reject_decision("p", "ann", rejected.id, "no")
    await store.write_versions([ALPHA_V2])
    flagged = await one(store, "p", on_alpha.id)
    assert flagged.state == "needs_review"
    assert causes(flagged) == [cause("new_version", document=ALPHA.key, read_version=1, now_version=2)]
    assert flagged.updated_at >= flagged.created_at
    assert (await one(store, "p", on_beta.id)).state == "active"
    assert (await one(store, "p", rejected.id)).state == "rejected"
    on_v2 = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    await store.write_versions([BETA.model_copy(update={"content_hash": "other"})])
    moved = await one(store, "p", on_beta.id)
    assert causes(moved) == [cause("new_version", document=BETA.key, read_version=1, now_version=2)]
    assert (await one(store, "p", on_v2.id)).state == "active"  # another document changed
    assert await store.delete_document(ALPHA.key)
    gone = await one(store, "p", on_v2.id)
    assert gone.state == "needs_review"
    assert causes(gone) == [cause("deleted", document=ALPHA.key, read_version=2, now_version=None)]
    again = await one(store, "p", on_alpha.id)  # flagged already: the new cause is kept beside the first
    assert again.state == "needs_review"
    assert causes(again) == [
        cause("new_version", document=ALPHA.key, read_version=1, now_version=2),
        cause("deleted", document=ALPHA.key, read_version=1, now_version=None),
    ]
    assert [d.id for d in await store.list_decisions("p", states=["active"])] == []


@covers("continue_decision_review")
async def test_review_reaches_what_rests_on_a_flagged_decision_a_step_at_a_time(store: GraphStore) -> None:
    await setup(store)
    a = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    b = await store.record_decision("p", "ann", decision(cites(a.id), choice_key="b"))
    c = await store.record_decision("p", "ann", decision(cites(b.id), await passage(store, BETA.key), choice_key="c"))
    idle = await store.continue_decision_review("p", limit=1)
    assert (idle.processed, idle.flagged, idle.remaining) == (0, [], 0)
    await store.write_versions([ALPHA_V2])
    assert [(await one(store, "p", i)).state for i in (a.id, b.id, c.id)] == ["needs_review", "active", "active"]
    step = await store.continue_decision_review("p", limit=1)
    assert (step.processed, step.flagged, step.remaining) == (1, [b.id], 1)
    flagged_b = await one(store, "p", b.id)
    assert flagged_b.state == "needs_review"
    assert causes(flagged_b) == [cause("needs_review", decision=a.id)]
    assert (await one(store, "p", c.id)).state == "active"
    step = await store.continue_decision_review("p", limit=1)
    assert (step.processed, step.flagged, step.remaining) == (1, [c.id], 1)
    assert causes(await one(store, "p", c.id)) == [cause("needs_review", decision=b.id)]
    step = await store.continue_decision_review("p", limit=1)
    assert (step.processed, step.flagged, step.remaining) == (1, [], 0)
    step = await store.continue_decision_review("p", limit=1)
    assert (step.processed, step.flagged, step.remaining) == (0, [], 0)


@covers("continue_decision_review")
async def test_review_of_one_project_leaves_another_projects_queue_alone(store: GraphStore) -> None:
    await setup(store, "p", "q")
    made: dict[str, tuple[str, str]] = {}
    for project in ("p", "q"):
        base = await store.record_decision(project, "ann", decision(await passage(store, ALPHA.key)))
        dependent = await store.record_decision(project, "ann", decision(cites(base.id), choice_key="dep"))
        made[project] = (base.id, dependent.id)
    await store.write_versions([ALPHA_V2])
    for project, (base_id, _) in made.items():
        assert (await one(store, project, base_id)).state == "needs_review"
    step = await store.continue_decision_review("p")
    assert (step.processed, step.flagged, step.remaining) == (1, [made["p"][1]], 1)  # p's dependent now queued
    assert (await one(store, "q", made["q"][1])).state == "active"
    step = await store.continue_decision_review("p")
    assert (step.processed, step.flagged, step.remaining) == (1, [], 0)
    assert (await one(store, "q", made["q"][1])).state == "active"
    step = await store.continue_decision_review()
    assert (step.processed, step.flagged, step.remaining) == (1, [made["q"][1]], 1)
    assert (await one(store, "q", made["q"][1])).state == "needs_review"
    step = await store.continue_decision_review(None, limit=5)
    assert (step.processed, step.flagged, step.remaining) == (1, [], 0)


@covers("record_decision", "continue_decision_review")
async def test_a_superseded_decision_is_replaced_and_what_rests_on_it_reviewed(store: GraphStore) -> None:
    await setup(store)
    old = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    dependent = await store.record_decision("p", "ann", decision(cites(old.id), choice_key="dep"))
    with pytest.raises(DecisionStateError):  # a decision cannot rest on the one it supersedes
        await store.record_decision("p", "ann", decision(cites(old.id), supersedes=old.id))
    with pytest.raises(DecisionNotFoundError):
        await store.record_decision("p", "ann", decision(await passage(store, BETA.key), supersedes="missing"))
    assert (await one(store, "p", old.id)).state == "active"
    new = await store.record_decision(
        "p",
        "bob",
        decision(await passage(store, BETA.key), conclusion="sqlite", supersedes=old.id, explanation="lighter"),
    )
    assert (new.state, new.supersedes, new.explanation, new.superseded_by) == ("active", old.id, "lighter", None)
    replaced = await one(store, "p", old.id)
    assert (replaced.state, replaced.superseded_by) == ("superseded", new.id)
    assert (await one(store, "p", dependent.id)).state == "active"  # until review reaches it
    step = await store.continue_decision_review("p")
    assert step.flagged == [dependent.id]
    flagged = await one(store, "p", dependent.id)
    assert flagged.state == "needs_review"
    assert causes(flagged) == [cause("superseded", decision=old.id)]
    with pytest.raises(DecisionStateError, match="superseded"):
        await store.record_decision("p", "ann", decision(await passage(store, BETA.key), supersedes=old.id))
    rejected = await store.record_decision("p", "ann", decision(await passage(store, BETA.key), choice_key="x"))
    await store.reject_decision("p", "ann", rejected.id, "no")
    with pytest.raises(DecisionStateError, match="rejected"):
        await store.record_decision("p", "ann", decision(await passage(store, BETA.key), supersedes=rejected.id))
    # A decision that needs review still stands: it can be superseded.
    successor = await store.record_decision(
        "p", "ann", decision(await passage(store, BETA.key), choice_key="dep", supersedes=dependent.id)
    )
    assert (await one(store, "p", dependent.id)).superseded_by == successor.id
    states = {d.id: d.state for d in await store.list_decisions("p")}
    assert states == {
        old.id: "superseded",
        dependent.id: "superseded",
        new.id: "active",
        rejected.id: "rejected",
        successor.id: "active",
    }


@covers("reaffirm_decision", "list_support_history")
async def test_a_reaffirmed_decision_rests_on_fresh_passages_and_keeps_its_history(store: GraphStore) -> None:
    await setup(store, "p", "q")
    base = await store.record_decision("p", "ann", decision(await passage(store, BETA.key), choice_key="base"))
    old_support = await passage(store, ALPHA.key, 0)
    made = await store.record_decision(
        "p", "ann", decision(old_support, cites(base.id), await passage(store, ALPHA.key, 1))
    )
    await store.write_versions([ALPHA_V2])
    assert (await one(store, "p", made.id)).state == "needs_review"
    with pytest.raises(StaleEvidenceError):
        await store.reaffirm_decision("p", "bob", made.id, [old_support], "still true")
    still = await one(store, "p", made.id)
    assert (still.state, len(still.review), len(still.supports)) == ("needs_review", 1, 3)
    fresh = await passage(store, ALPHA.key, 0, note="the notes")
    again = await store.reaffirm_decision("p", "bob", made.id, [fresh], "the notes say the same")
    assert (again.state, again.review, again.explanation, again.agent) == (
        "active",
        [],
        "the notes say the same",
        "ann",
    )
    assert [(s.ordinal, s.kind, s.origin, s.current) for s in again.supports] == [
        (1, "decision", "recorded", True),
        (3, "passage", "reaffirmed", True),
    ]
    assert (again.supports[1].ref, again.supports[1].version, again.supports[1].agent) == (fresh.ref, 2, "bob")
    assert again.supports[1].content_hash == ALPHA_V2.content_hash
    history = await store.list_support_history("p", made.id)
    assert [(s.ordinal, s.origin, s.current) for s in history] == [
        (0, "recorded", False),
        (1, "recorded", True),
        (2, "recorded", False),
        (3, "reaffirmed", True),
    ]
    assert (history[0].ref, history[0].version) == (old_support.ref, 1)
    assert [s.ordinal for s in await store.list_support_history("p", made.id, after_ordinal=0, limit=2)] == [1, 2]
    assert [s.ordinal for s in await store.list_support_history("p", made.id, after_ordinal=2)] == [3]
    assert await store.list_support_history("p", made.id, after_ordinal=3) == []
    with pytest.raises(DecisionNotFoundError):
        await store.list_support_history("p", "missing")
    with pytest.raises(DecisionNotFoundError):
        await store.list_support_history("q", made.id)
    # An active decision may be reaffirmed too: its passages are replaced again.
    twice = await store.reaffirm_decision("p", "ann", made.id, [await passage(store, ALPHA.key)], "checked")
    assert [s.ordinal for s in twice.supports] == [1, 4]
    assert [s.ordinal for s in await store.list_support_history("p", made.id) if s.current] == [1, 4]
    with pytest.raises(DecisionNotFoundError):
        await store.reaffirm_decision("p", "ann", "missing", [fresh], "x")


@covers("reaffirm_decision")
async def test_reaffirming_waits_for_what_the_decision_rests_on(store: GraphStore) -> None:
    await setup(store)
    base = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    dependent = await store.record_decision(
        "p", "ann", decision(cites(base.id), await passage(store, BETA.key), choice_key="dep")
    )
    await store.write_versions([ALPHA_V2])
    await store.continue_decision_review("p")
    assert (await one(store, "p", dependent.id)).state == "needs_review"
    with pytest.raises(DecisionStateError, match="needs_review"):
        await store.reaffirm_decision("p", "ann", dependent.id, [await passage(store, BETA.key)], "still")
    assert (await one(store, "p", dependent.id)).state == "needs_review"
    assert [s.ordinal for s in await store.list_support_history("p", dependent.id)] == [0, 1]  # nothing written
    await store.reaffirm_decision("p", "ann", base.id, [await passage(store, ALPHA.key)], "checked")
    back = await store.reaffirm_decision("p", "ann", dependent.id, [await passage(store, BETA.key)], "still")
    assert (back.state, back.review) == ("active", [])
    step = await store.continue_decision_review("p")
    assert step.flagged == [] and step.remaining == 0
    await store.reject_decision("p", "ann", dependent.id, "no")
    with pytest.raises(DecisionStateError, match="rejected"):
        await store.reaffirm_decision("p", "ann", dependent.id, [await passage(store, BETA.key)], "again")
    successor = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key), supersedes=base.id))
    with pytest.raises(DecisionStateError, match="superseded"):
        await store.reaffirm_decision("p", "ann", base.id, [await passage(store, ALPHA.key)], "again")
    assert (await one(store, "p", successor.id)).state == "active"


@covers("reject_decision", "continue_decision_review")
async def test_a_rejected_decision_stays_rejected_and_what_rests_on_it_is_reviewed(store: GraphStore) -> None:
    await setup(store, "p", "q")
    made = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    dependent = await store.record_decision("p", "ann", decision(cites(made.id), choice_key="dep"))
    with pytest.raises(DecisionNotFoundError):
        await store.reject_decision("q", "bob", made.id, "wrong")
    rejected = await store.reject_decision("p", "bob", made.id, "the data is too large")
    assert (rejected.id, rejected.state, rejected.explanation, rejected.agent) == (
        made.id,
        "rejected",
        "the data is too large",
        "ann",
    )
    assert rejected.supports == made.supports  # history kept
    with pytest.raises(DecisionStateError, match="rejected"):
        await store.reject_decision("p", "bob", made.id, "again")
    with pytest.raises(DecisionNotFoundError):
        await store.reject_decision("p", "bob", "missing", "wrong")
    assert (await one(store, "p", made.id)).explanation == "the data is too large"
    step = await store.continue_decision_review("p")
    assert step.flagged == [dependent.id]
    assert causes(await one(store, "p", dependent.id)) == [cause("rejected", decision=made.id)]
    await store.write_versions([ALPHA_V2])  # a rejected decision is not flagged
    assert (await one(store, "p", made.id)).review == []


@covers("list_decisions")
async def test_decisions_are_listed_by_task_and_state_in_creation_order(store: GraphStore) -> None:
    await setup(store, "p", "q")
    await store.create_task("p", "ann", "u", "choose a language")
    support = await passage(store, ALPHA.key)
    made = [
        (await store.record_decision("p", "ann", decision(support, task=task, choice_key=f"k{i}"))).id
        for i, task in enumerate(["t", "u", "t", "t", "u"])
    ]
    await store.reject_decision("p", "ann", made[2], "no")
    elsewhere = await store.record_decision("q", "ann", decision(support))
    assert [d.id for d in await store.list_decisions("p")] == made
    assert [d.id for d in await store.list_decisions("q")] == [elsewhere.id]
    assert [d.id for d in await store.list_decisions("p", task="t")] == [made[0], made[2], made[3]]
    assert [d.id for d in await store.list_decisions("p", states=["rejected"])] == [made[2]]
    assert [d.id for d in await store.list_decisions("p", task="t", states=["active"])] == [made[0], made[3]]
    assert [d.id for d in await store.list_decisions("p", states=["rejected", "active"])] == made
    assert await store.list_decisions("p", states=["superseded"]) == []
    assert await store.list_decisions("p", states=[]) == []
    pages: list[list[str]] = []
    after: str | None = None
    while page := [d.id for d in await store.list_decisions("p", after_id=after, limit=2)]:
        pages.append(page)
        after = page[-1]
    assert pages == [made[0:2], made[2:4], made[4:]]
    assert [d.id for d in await store.list_decisions("p", task="t", after_id=made[0], limit=1)] == [made[2]]
    assert await store.list_decisions("p", after_id=made[-1]) == []
    listed = await store.list_decisions("p", limit=1)
    assert listed == await store.get_decisions("p", [made[0]])  # the whole record, supports included
    with pytest.raises(DecisionNotFoundError):
        await store.list_decisions("p", after_id="missing")
    with pytest.raises(DecisionNotFoundError):
        await store.list_decisions("q", after_id=made[0])


@covers("decision_texts")
async def test_decision_texts_hold_what_search_ranks_by(store: GraphStore) -> None:
    await setup(store, "p", "q")
    support = await passage(store, ALPHA.key)
    embedded = await store.record_decision(
        "p", "ann", decision(support, choice_key="store", conclusion="Kuzu", vector=(0.5, -0.25, 1.0))
    )
    plain = await store.record_decision(
        "p", "ann", decision(support, choice_key="cache", conclusion="none", rationale="too small to matter")
    )
    rejected = await store.record_decision("p", "ann", decision(support, choice_key="queue"))
    await store.reject_decision("p", "ann", rejected.id, "no")
    await store.record_decision("q", "ann", decision(support, choice_key="elsewhere"))
    texts = {t.id: t for t in await store.decision_texts("p", ["active"])}
    assert set(texts) == {embedded.id, plain.id}
    assert all(t.state == "active" for t in texts.values())
    for part in ("store", "Kuzu", "it embeds"):
        assert part in texts[embedded.id].text
    for part in ("cache", "none", "too small to matter"):
        assert part in texts[plain.id].text
    assert "Kuzu" not in texts[plain.id].text
    assert texts[embedded.id].vector == (0.5, -0.25, 1.0)
    assert texts[plain.id].vector is None
    assert [(t.id, t.state) for t in await store.decision_texts("p", ["rejected"])] == [(rejected.id, "rejected")]
    assert {t.id for t in await store.decision_texts("p", ["active", "rejected"])} == {
        embedded.id,
        plain.id,
        rejected.id,
    }
    assert await store.decision_texts("p", ["superseded", "needs_review"]) == []
    assert ["elsewhere" in t.text for t in await store.decision_texts("q", ["active"])] == [True]
    assert await store.decision_texts("r", ["active"]) == []


@covers("list_conflicts")
async def test_active_decisions_on_one_choice_with_different_conclusions_conflict(store: GraphStore) -> None:
    await setup(store, "p", "q")
    support = await passage(store, ALPHA.key)

    async def made(project: str, key: str, conclusion: str) -> str:
        return (
            await store.record_decision(project, "ann", decision(support, choice_key=key, conclusion=conclusion))
        ).id

    assert await store.list_conflicts("p") == []
    db = [await made("p", "db", "Kuzu"), await made("p", "db", "Postgres")]
    await made("p", "cache", "Yes")
    await made("p", "cache", " yes ")  # the same conclusion, written otherwise
    api = [await made("p", "api", "REST"), await made("p", "api", "gRPC")]
    kafka = await made("p", "queue", "Kafka")
    await made("p", "queue", "Redis")
    await store.record_decision("p", "ann", decision(support, choice_key="queue", conclusion="redis", supersedes=kafka))
    lang = await made("p", "lang", "Python")
    await store.reject_decision("p", "ann", await made("p", "lang", "Rust"), "no")
    await made("q", "db", "Kuzu")
    q_db = [await made("q", "db", "SQLite")]
    groups = await store.list_conflicts("p")
    assert [sorted(d.id for d in group) for group in groups] == [sorted(api), sorted(db)]
    assert [{d.choice_key for d in group} for group in groups] == [{"api"}, {"db"}]
    assert all(d.state == "active" for group in groups for d in group)
    assert lang not in {d.id for group in groups for d in group}
    assert [[d.choice_key for d in group] for group in await store.list_conflicts("p", limit=1)] == [["api"] * 2]
    [in_q] = await store.list_conflicts("q")
    assert len(in_q) == 2 and q_db[0] in {d.id for d in in_q} and not {d.id for d in in_q} & set(db)
    await store.reject_decision("p", "ann", api[1], "no")
    assert [{d.choice_key for d in group} for group in await store.list_conflicts("p")] == [{"db"}]


@covers("get_decisions", "list_decisions", "list_support_history", "decision_texts", "list_conflicts")
async def test_decisions_are_read_back_by_a_read_only_open(factory: StoreFactory, location: str) -> None:
    async with factory.connect(location, read_only=True) as empty:
        assert await empty.list_decisions("p") == []
        assert await empty.get_decisions("p", ["missing"]) == []
        assert await empty.decision_texts("p", ["active"]) == []
        assert await empty.list_conflicts("p") == []
    async with factory.connect(location) as store:
        await setup(store)
        first = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key), vector=(1.0, 0.0)))
        second = await store.record_decision("p", "ann", decision(cites(first.id), conclusion="sqlite"))
        await store.write_versions([ALPHA_V2])
        await store.continue_decision_review()
        written = await store.get_decisions("p", [first.id, second.id])
        history = await store.list_support_history("p", second.id)
    async with factory.connect(location, read_only=True) as reopened:
        assert await reopened.get_decisions("p", [first.id, second.id]) == written
        assert [d.state for d in written] == ["needs_review", "needs_review"]
        assert [d.id for d in await reopened.list_decisions("p", task="t")] == [first.id, second.id]
        assert await reopened.list_support_history("p", second.id) == history
        assert {t.id: t.vector for t in await reopened.decision_texts("p", ["needs_review"])} == {
            first.id: (1.0, 0.0),
            second.id: None,
        }
        assert await reopened.list_conflicts("p") == []  # neither is active
        with pytest.raises(StoreError, match="read-only"):
            await reopened.reject_decision("p", "ann", first.id, "no")
        with pytest.raises(StoreError, match="read-only"):
            await reopened.continue_decision_review()
