"""The decision tools in process: a decision rests only on passages this session read whole, `[n]`
and evidence ids both name them, reject_decision is a person's override, and results render for an LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from evigraph import KnowledgeBase, ToolError, Toolkit

FUNDING = "ReefWatch is funded by the Harbour Trust. The grant covers two survey boats and runs until 2027."
PEOPLE = "Marta Oliveira leads ReefWatch from Porto. She reports to the Harbour Trust every quarter."


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest(text=FUNDING, key="funding", title="Funding")
        await kb.ingest(text=PEOPLE, key="people", title="People")
        yield kb


@pytest.fixture
async def tk(kb: KnowledgeBase) -> Toolkit:
    toolkit = Toolkit(kb, project="harbor", agent="analyst")
    await toolkit.call("create_task", {"task_name": "funding", "goal": "Find who funds ReefWatch"})
    return toolkit


async def found(tk: Toolkit, query: str, document: str) -> int:
    """The number a passage search gave the passage of `document`."""
    hits = (await tk.call("search_passages", {"query": query, "mode": "lexical"})).model_dump()["hits"]
    return next(h["n"] for h in hits if h["source"]["document_key"] == document)


def decision(n: int | str, **extra: Any) -> dict[str, Any]:
    return {
        "task_name": "funding",
        "choice_key": "funder",
        "conclusion": "The Harbour Trust funds ReefWatch",
        "rationale": "The funding page names the trust and the grant.",
        "supports": [{"kind": "passage", "evidence": n, "note": "names the funder"}],
        **extra,
    }


async def test_a_decision_rests_only_on_passages_read_whole_in_this_session(tk: Toolkit) -> None:
    n = await found(tk, "Who funds ReefWatch?", "funding")
    with pytest.raises(ToolError, match="not read in full") as info:  # a search snippet is not enough
        await tk.call("record_decision", decision(n))
    assert "read_passages" in info.value.hint
    await tk.call("read_passages", {"passages": [n], "max_chars": 10})  # cut: still not read whole
    with pytest.raises(ToolError, match="not read in full"):
        await tk.call("record_decision", decision(n))
    await tk.call("read_passages", {"passages": [n]})
    made = (await tk.call("record_decision", decision(n))).model_dump()["decision"]
    support = made["supports"][0]
    assert (support["document"], support["version"], support["note"]) == ("funding", 1, "names the funder")
    evidence_id = tk.ledger.get(n).evidence_id  # type: ignore[union-attr]
    assert support["ref"] == evidence_id and support["content_hash"]
    again = await tk.call("record_decision", decision(evidence_id, choice_key="funder-by-id"))  # the id works too
    assert again.model_dump()["decision"]["supports"][0]["ref"] == evidence_id
    other_session = tk.new_session()  # what one conversation read, another did not
    with pytest.raises(ToolError, match="not evidence of this session"):
        await other_session.call("record_decision", decision(n))
    with pytest.raises(ToolError, match="not read in full"):
        await other_session.call("record_decision", decision(evidence_id))


async def test_only_passages_support_a_decision_and_every_bound_is_checked(tk: Toolkit) -> None:
    entities = (await tk.call("search_entities", {"query": "Harbour Trust"})).model_dump()["hits"]
    with pytest.raises(ToolError, match="not a passage"):
        await tk.call("record_decision", decision(entities[0]["n"]))
    n = await found(tk, "Who funds ReefWatch?", "funding")
    await tk.call("read_passages", {"passages": [n]})
    too_many = decision(n) | {"supports": [{"kind": "passage", "evidence": n}] * 21}
    for bad, field in (
        (decision(n) | {"supports": []}, "supports"),
        (too_many, "supports"),
        (decision(n) | {"conclusion": "x" * 4001}, "conclusion"),
        (decision(n) | {"assumptions": ["a"] * 21}, "assumptions"),
        (decision(n) | {"supports": [{"kind": "decision", "decision_id": "not-a-uuid"}]}, "decision_id"),
        (decision(n) | {"supports": [{"kind": "quote", "evidence": n}]}, "supports"),
        (decision(n) | {"request_id": "r" * 65}, "request_id"),
    ):
        with pytest.raises(ToolError, match=field):
            await tk.call("record_decision", bad)
    assert (await tk.call("list_decisions", {"task_name": "funding"})).model_dump()["decisions"] == []


async def test_review_flags_follow_a_changed_source_and_reaffirm_needs_the_current_text(
    kb: KnowledgeBase, tk: Toolkit
) -> None:
    n = await found(tk, "Who funds ReefWatch?", "funding")
    await tk.call("read_passages", {"passages": [n]})
    first = (await tk.call("record_decision", decision(n))).model_dump()["decision"]
    rests = {"kind": "decision", "decision_id": first["id"], "note": "the funder"}
    second = await tk.call(
        "record_decision",
        decision(n) | {"choice_key": "credit", "conclusion": "Credit the trust", "supports": [rests]},
    )
    second_id = second.model_dump()["decision"]["id"]
    await kb.ingest(text=FUNDING.replace("Harbour Trust", "City of Porto"), key="funding", title="Funding")

    view = (await tk.call("get_decision", {"decision_id": first["id"]})).to_llm_text()
    assert "[needs_review]" in view and "document 'funding' changed: read at version 1, now version 2" in view
    step = (await tk.call("continue_decision_review", {"limit": 5})).model_dump()["progress"]
    assert step["remaining"] == 0
    listed = (await tk.call("list_decisions_for_review", {})).model_dump()["decisions"]
    assert {d["id"] for d in listed} == {first["id"], second_id}
    assert not (await tk.call("search_decisions", {"query": "Harbour Trust funds"})).model_dump()["decisions"]
    flagged = await tk.call("search_decisions", {"query": "Harbour Trust funds", "include_review": True})
    assert first["id"] in {d["id"] for d in flagged.model_dump()["decisions"]}

    with pytest.raises(ToolError, match="no current passage"):  # the old version's passage is gone
        await tk.call("reaffirm_decision", {"decision_id": first["id"], "evidence_ids": [n]})
    with pytest.raises(ToolError, match="which is needs_review"):  # rests on a flagged decision
        fresh = await found(tk, "Who funds ReefWatch?", "funding")
        await tk.call("read_passages", {"passages": [fresh]})
        await tk.call("reaffirm_decision", {"decision_id": second_id, "evidence_ids": [fresh]})
    done = (await tk.call("reaffirm_decision", {"decision_id": first["id"], "evidence_ids": [fresh]})).model_dump()
    assert done["decision"]["state"] == "active" and done["decision"]["review"] == []
    history = (await tk.call("list_support_history", {"decision_id": first["id"]})).model_dump()["supports"]
    assert [(s["origin"], s["current"], s["version"]) for s in history] == [
        ("recorded", False, 1),
        ("reaffirmed", True, 2),
    ]


async def test_reject_is_offered_only_to_a_person_who_allows_it(kb: KnowledgeBase, tk: Toolkit) -> None:
    assert "reject_decision" not in {t.name for t in tk.tools()}
    n = await found(tk, "Who funds ReefWatch?", "funding")
    await tk.call("read_passages", {"passages": [n]})
    made = (await tk.call("record_decision", decision(n))).model_dump()["decision"]
    with pytest.raises(ToolError, match="not offered"):
        await tk.call("reject_decision", {"decision_id": made["id"], "reason": "wrong"})
    person = Toolkit(kb, project="harbor", agent="reviewer", allow_reject=True)
    reason = {"decision_id": made["id"], "reason": "The page is old."}
    rejected = (await person.call("reject_decision", reason)).model_dump()
    assert rejected["decision"]["state"] == "rejected" and rejected["decision"]["explanation"] == "The page is old."
    supersede = {
        "decision_id": made["id"],
        "conclusion": "The city funds it",
        "rationale": "A newer page.",
        "explanation": "The trust stopped.",
        "supports": [{"kind": "passage", "evidence": n}],
    }
    with pytest.raises(ToolError, match="it is rejected"):
        await tk.call("supersede_decision", supersede)
    read_only = Toolkit(kb, read_only=True, project="p", agent="a", allow_reject=True)
    assert "reject_decision" not in {t.name for t in read_only.tools()}


async def test_views_list_decisions_and_conflicts_without_numbering_them(tk: Toolkit) -> None:
    n = await found(tk, "Who funds ReefWatch?", "funding")
    await tk.call("read_passages", {"passages": [n]})
    numbered = len(tk.ledger)
    await tk.call("create_task", {"task_name": "report", "goal": "Write the report"})
    await tk.call("record_decision", decision(n))
    await tk.call("record_decision", decision(n) | {"task_name": "report", "conclusion": "Nobody funds it"})
    view = (await tk.call("get_task", {"task_name": "funding"})).to_llm_text()
    assert "Decisions (get_decision gives one in full)" in view and "funder: The Harbour Trust funds ReefWatch" in view
    conflicts = (await tk.call("list_conflicts", {})).model_dump()["conflicts"]
    assert sorted(d["conclusion"] for d in conflicts["funder"]) == [
        "Nobody funds it",
        "The Harbour Trust funds ReefWatch",
    ]
    precedents = (await tk.call("search_decisions", {"query": "who funds ReefWatch"})).model_dump()["decisions"]
    assert {d["task"] for d in precedents} == {"funding", "report"}
    elsewhere = Toolkit(tk.kb, project="other", agent="analyst")
    assert (await elsewhere.call("search_decisions", {"query": "who funds ReefWatch"})).model_dump()["decisions"] == []
    assert len(tk.ledger) == numbered  # decisions are the agent's notes, not evidence


async def test_a_step_rests_on_passages_read_whole_like_a_decision(tk: Toolkit) -> None:
    n = await found(tk, "Who funds ReefWatch?", "funding")
    step: dict[str, Any] = {"task_name": "funding", "name": "read", "state": "completed", "result": "The trust."}
    cited = step | {"supports": [{"kind": "passage", "evidence": n, "note": "names the funder"}]}
    with pytest.raises(ToolError, match="not read in full") as unread:
        await tk.call("set_step", cited)
    assert "read_passages" in unread.value.hint
    with pytest.raises(ToolError, match="supports"):
        await tk.call("set_step", step | {"supports": [{"kind": "passage", "evidence": n}] * 21})
    assert (await tk.call("list_steps", {"task_name": "funding", "state": "completed"})).model_dump()["steps"] == []
    await tk.call("read_passages", {"passages": [n]})
    result = await tk.call("set_step", cited)
    [support] = result.model_dump()["step"]["supports"]
    evidence_id = tk.ledger.get(n).evidence_id  # type: ignore[union-attr]
    assert (support["ref"], support["document"], support["version"]) == (evidence_id, "funding", 1)
    text = result.to_llm_text()
    assert "1 support(s)" in text and f"passage {evidence_id} ('funding' v1): names the funder" in text
    listed = await tk.call("list_steps", {"task_name": "funding", "state": "completed"})
    assert listed.model_dump()["steps"][0]["supports"] == (support,)
