"""Decisions through `kb.traces()`: evidence named by id, every input bounded, precedents found by
words and by meaning, flags set by any document change, scopes that hide documents but not decisions;
and a step's supports, the same model, bounded to 20, replaced by each `set_step`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.conftest import HashEmbedder

from evigraph import ConfigurationError, KnowledgeBase
from evigraph.errors import DecisionNotFoundError, StaleEvidenceError
from evigraph.evidence import passage_digest
from evigraph.kb import Traces

FUNDING = "ReefWatch is funded by the Harbour Trust. The grant covers two survey boats."
PEOPLE = "Marta Oliveira leads ReefWatch from Porto and reports to the trust."


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=HashEmbedder()) as kb:
        await kb.ingest(text=FUNDING, key="funding", title="Funding")
        await kb.ingest(text=PEOPLE, key="people", title="People")
        yield kb


@pytest.fixture
async def traces(kb: KnowledgeBase) -> Traces:
    found = kb.traces("harbor", "analyst")
    await found.create_task("funding", "Find who funds ReefWatch")
    return found


async def passage(kb: KnowledgeBase, document: str) -> str:
    hits = (await kb.search_passages("ReefWatch", mode="lexical")).hits
    return next(h.evidence_id for h in hits if h.document_key == document)


async def test_python_callers_name_passages_by_id_and_every_bound_is_named(kb: KnowledgeBase, traces: Traces) -> None:
    funding = await passage(kb, "funding")
    with pytest.raises(ConfigurationError, match="number of a tool session") as info:
        await traces.record_decision("funding", "funder", "c", "r", [{"kind": "passage", "evidence": 3}])
    assert "evidence_id" in info.value.hint
    entity = (await kb.search_entities("Harbour Trust")).hits[0].evidence_id
    with pytest.raises(ConfigurationError, match="a decision rests on passages"):
        await traces.record_decision("funding", "funder", "c", "r", [{"kind": "passage", "evidence": entity}])
    for field, bad in (
        ("choice_key", {"choice_key": ""}),
        ("rationale", {"rationale": "r" * 8001}),
        ("supports", {"supports": []}),
        ("open_questions", {"open_questions": ["q"] * 21}),
    ):
        args = {"choice_key": "funder", "conclusion": "c", "rationale": "r"} | bad
        supports = args.pop("supports", [{"kind": "passage", "evidence": funding}])
        with pytest.raises(ConfigurationError, match=field):
            await traces.record_decision("funding", supports=supports, **args)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="decision_id"):
        await traces.get_decision("../etc/passwd")
    with pytest.raises(DecisionNotFoundError, match="no decision"):
        await traces.get_decision("00000000-0000-4000-8000-000000000000")
    assert (await traces.list_decisions("funding")).decisions == []  # nothing half-written


async def test_precedents_are_found_by_words_and_by_meaning_within_the_project(
    kb: KnowledgeBase, traces: Traces
) -> None:
    funding = [{"kind": "passage", "evidence": await passage(kb, "funding")}]
    await traces.create_task("boats", "Plan the survey season")
    trust = await traces.record_decision("funding", "funder", "The Harbour Trust funds ReefWatch", "page", funding)
    boats = await traces.record_decision("boats", "fleet", "Two survey boats are available", "grant", funding)
    hits = await traces.search_decisions("how many survey boats")
    assert hits[0].decision.id == boats.id and set(hits[0].scores) == {"words", "meaning"}
    assert {h.decision.id for h in await traces.search_decisions("Harbour Trust")} >= {trust.id}
    assert await kb.traces("other", "analyst").search_decisions("survey boats") == []
    with pytest.raises(ConfigurationError, match="query"):
        await traces.search_decisions("")


async def test_deleting_a_document_flags_what_rests_on_it(kb: KnowledgeBase, traces: Traces) -> None:
    people = [{"kind": "passage", "evidence": await passage(kb, "people")}]
    funding = [{"kind": "passage", "evidence": await passage(kb, "funding")}]
    lead = await traces.record_decision("funding", "lead", "Marta Oliveira leads ReefWatch", "page", people)
    funder = await traces.record_decision("funding", "funder", "The trust funds it", "page", funding)
    await kb.delete_document("people")
    flagged = await traces.get_decision(lead.id)
    assert flagged.state == "needs_review"
    assert [(c.change, c.document, c.now_version) for c in flagged.review] == [("deleted", "people", None)]
    assert (await traces.get_decision(funder.id)).state == "active"
    with pytest.raises(StaleEvidenceError, match="no current passage"):
        await traces.reaffirm_decision(lead.id, [people[0]["evidence"]])
    page = await traces.list_decisions_for_review()
    assert [d.id for d in page.decisions] == [lead.id] and page.next_after_id is None


async def test_a_python_caller_pins_a_passage_to_the_text_it_read_by_its_digest(
    kb: KnowledgeBase, traces: Traces
) -> None:
    funding, people = await passage(kb, "funding"), await passage(kb, "people")
    [read] = (await kb.read_passages([funding.removeprefix("passage:")])).passages
    supports = [{"kind": "passage", "evidence": funding}]
    made = await traces.record_decision(
        "funding", "funder", "c", "r", supports, read_digests={funding: passage_digest(read)}
    )
    assert made.state == "active"
    misread = passage_digest(read.model_copy(update={"text": read.text.replace("Harbour", "City")}))
    with pytest.raises(StaleEvidenceError, match="does not read as it did") as info:
        await traces.record_decision("funding", "other", "c", "r", supports, read_digests={funding: misread})
    assert "read_passages" in info.value.hint
    with pytest.raises(StaleEvidenceError, match="does not read as it did"):
        await traces.reaffirm_decision(made.id, [funding], read_digests={funding: misread})
    with pytest.raises(StaleEvidenceError, match="does not read as it did"):
        await traces.supersede_decision(made.id, "c2", "r2", "e", supports, read_digests={funding: misread})
    with pytest.raises(ConfigurationError, match="not a sha256"):
        await traces.record_decision("funding", "other", "c", "r", supports, read_digests={funding: "abc"})
    with pytest.raises(ConfigurationError, match="not a passage this decision rests on"):
        await traces.record_decision("funding", "other", "c", "r", supports, read_digests={people: misread})
    [cut] = (await kb.read_passages([funding.removeprefix("passage:")], max_chars=10)).passages
    with pytest.raises(ConfigurationError, match="cut") as cut_info:
        passage_digest(cut)
    assert "read it whole" in cut_info.value.hint
    assert [d.id for d in (await traces.list_decisions("funding")).decisions] == [made.id]  # nothing else written


async def test_a_scope_hides_documents_but_not_decisions(kb: KnowledgeBase, traces: Traces, tmp_path: Path) -> None:
    funding = await passage(kb, "funding")
    made = await traces.record_decision(
        "funding", "funder", "The trust funds it", "page", [{"kind": "passage", "evidence": funding}]
    )
    await kb.close()
    async with KnowledgeBase(tmp_path / "kb.db", scope=["people"], embedder=HashEmbedder()) as scoped:
        inside = scoped.traces("harbor", "analyst")
        assert (await inside.get_decision(made.id)).conclusion == "The trust funds it"
        with pytest.raises(StaleEvidenceError, match="outside"):  # a support names evidence inside the scope only
            await inside.record_decision("funding", "other", "c", "r", [{"kind": "passage", "evidence": funding}])


# -- a step rests on supports as a decision does --------------------------------------------------

MISSING = "00000000-0000-4000-8000-000000000000"


def on(ref: str, note: str | None = None) -> dict[str, Any]:
    return {"kind": "passage", "evidence": ref, "note": note}


async def test_a_step_rests_on_passages_and_decisions_and_reads_them_back(
    tmp_path: Path, kb: KnowledgeBase, traces: Traces
) -> None:
    ref = await passage(kb, "funding")
    standing = await traces.record_decision("funding", "funder", "The trust", "page", [on(ref)])
    [read] = (await kb.read_passages([ref.removeprefix("passage:")])).passages
    supports = [on(ref, "names the funder"), {"kind": "decision", "decision_id": standing.id}]
    step = await traces.set_step(
        "funding",
        "read sources",
        "completed",
        result="The Harbour Trust.",
        result_basis="supported",
        supports=supports,
        read_digests={ref: passage_digest(read)},
    )
    pinned, cited = step.supports
    assert (pinned.kind, pinned.ref, pinned.document, pinned.version) == ("passage", ref, "funding", 1)
    assert pinned.note == "names the funder" and pinned.content_hash  # the version's hash, pinned
    assert (cited.kind, cited.ref) == ("decision", standing.id)
    assert (await traces.list_steps("funding", "completed")).steps == [step]
    cleared = await traces.set_step("funding", "read sources", "in_progress")  # each set_step replaces them
    assert cleared.supports == () and (await traces.list_steps("funding", "in_progress")).steps[0].supports == ()
    await traces.set_step("funding", "read sources", "completed", result_event_seq=1, supports=supports[:1])
    await kb.close()
    async with KnowledgeBase(tmp_path / "kb.db", read_only=True) as again:
        [kept] = (await again.traces("harbor", "analyst").list_steps("funding", "completed")).steps
        assert [s.ref for s in kept.supports] == [ref]


async def test_bad_supports_are_refused_with_the_fix_and_write_nothing(kb: KnowledgeBase, traces: Traces) -> None:
    ref = await passage(kb, "funding")
    with pytest.raises(ConfigurationError, match="supports: List should have at most 20 items"):
        await traces.set_step("funding", "s", "failed", supports=[on(ref)] * 21)
    with pytest.raises(ConfigurationError, match=r"supports\.0\.passage\.evidence"):
        await traces.set_step("funding", "s", "failed", supports=[on("")])
    with pytest.raises(ConfigurationError, match=r"supports\.0"):
        await traces.set_step("funding", "s", "failed", supports=[{"kind": "entity", "evidence": ref}])
    with pytest.raises(StaleEvidenceError, match="names no current passage") as unknown:
        await traces.set_step("funding", "s", "failed", supports=[on("passage:no-such-passage")])
    assert "read_passages" in unknown.value.hint
    with pytest.raises(ConfigurationError, match="number of a tool session") as numbered:
        await traces.set_step("funding", "s", "failed", supports=[{"kind": "passage", "evidence": 3}])
    assert "evidence_id" in numbered.value.hint
    with pytest.raises(DecisionNotFoundError, match=f"no decision {MISSING}") as missing:
        await traces.set_step("funding", "s", "failed", supports=[{"kind": "decision", "decision_id": MISSING}])
    assert "list_decisions" in missing.value.hint
    with pytest.raises(StaleEvidenceError, match="does not read as it did"):
        await traces.set_step("funding", "s", "failed", supports=[on(ref)], read_digests={ref: "0" * 64})
    for state in ("failed", "completed", "in_progress"):
        assert (await traces.list_steps("funding", state)).steps == []  # type: ignore[arg-type]
    assert (await traces.list_events("funding")).events == []
