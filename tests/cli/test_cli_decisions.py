"""`evigraph decisions` and `evigraph decision ID`: a person reads the decisions agents recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import run_cli

from evigraph import KnowledgeBase

FIRST = "ReefWatch is funded by the Ocean Trust. The Harbor Council gave a grant in 2023."
SECOND = "ReefWatch is funded by the Sea Fund since 2024. The Ocean Trust left."


async def _record(db: Path) -> dict[str, str]:
    """Two decisions on the first text (the second resting on the first), a third superseded on
    the second text, then the document changed: the first two need review."""
    async with KnowledgeBase(db) as kb:
        await kb.ingest(text=FIRST, key="funding", title="Funding")
        passage = (await kb.search_passages("Ocean Trust", mode="lexical")).hits[0].evidence_id
        traces = kb.traces("harbor", "analyst")
        await traces.create_task("funding", "Find who funds ReefWatch")
        await traces.create_task("audit", "Check the 2023 accounts")
        await traces.create_task("idle", "Nothing decided here")
        funder = await traces.record_decision(
            "funding",
            "funder",
            "The Ocean Trust funds ReefWatch",
            "The funding page names it.",
            [{"kind": "passage", "evidence": passage, "note": "names the funder"}],
        )
        scope = await traces.record_decision(
            "audit",
            "audit-scope",
            "Audit the Ocean Trust grant",
            "The funder decides the scope.",
            [{"kind": "decision", "decision_id": funder.id}],
        )
        await kb.traces("elsewhere", "analyst").create_task("funding", "Not this project")
        await kb.ingest(text=SECOND, key="funding", title="Funding")
        newer = (await kb.search_passages("Sea Fund", mode="lexical")).hits[0].evidence_id
        draft = await traces.record_decision(
            "funding",
            "next-funder",
            "The Sea Fund may fund ReefWatch",
            "A first reading.",
            [{"kind": "passage", "evidence": newer}],
        )
        final = await traces.supersede_decision(
            draft.id,
            "The Sea Fund funds ReefWatch",
            "Read again in full.",
            "It is certain, not a maybe.",
            [{"kind": "passage", "evidence": newer}],
        )
    return {"funder": funder.id, "scope": scope.id, "draft": draft.id, "final": final.id}


def test_decisions_list_by_task_for_review_and_as_json(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    ids = asyncio.run(_record(db))
    at = ("--project", "harbor", "--db", str(db))

    listed = run_cli("decisions", *at)
    assert listed.code == 0, listed.err
    out = listed.out
    assert "standing decision(s) of task 'audit'" in out and "standing decision(s) of task 'funding'" in out
    assert out.index("task 'audit'") < out.index("Audit the Ocean Trust grant") < out.index("task 'funding'")
    assert out.index("task 'funding'") < out.index("The Ocean Trust funds ReefWatch")
    assert "The Sea Fund funds ReefWatch" in out and "may fund" not in out  # superseded is history
    assert "idle" not in out and "Not this project" not in out

    history = run_cli("decisions", *at, "--task", "funding")
    assert history.code == 0, history.err
    assert f"[superseded] {ids['draft']}" in history.out and f"[active] {ids['final']}" in history.out
    assert "Audit the Ocean Trust grant" not in history.out

    review = run_cli("decisions", *at, "--review")
    assert review.code == 0, review.err
    assert "2 decision(s) need review" in review.out
    assert f"[needs_review] {ids['funder']}" in review.out
    assert "document 'funding' changed: read at version 1, now version 2" in review.out
    assert f"rests on decision {ids['funder']}" in review.out and ids["final"] not in review.out
    one = run_cli("decisions", *at, "--review", "--task", "audit", "--json").json()
    assert [d["id"] for d in one["decisions"]] == [ids["scope"]] and one["next_after_id"] is None

    grouped = run_cli("decisions", *at, "--json").json()
    by_task = {g["task"]: [d["id"] for d in g["decisions"]] for g in grouped["tasks"]}
    assert by_task == {"audit": [ids["scope"]], "funding": [ids["funder"], ids["final"]]}
    paged = run_cli("decisions", *at, "--task", "funding", "--limit", "1")
    assert paged.code == 0 and f"--task funding --after {ids['funder']}" in paged.out
    rest = run_cli("decisions", *at, "--task", "funding", "--after", ids["funder"], "--json").json()
    assert [d["id"] for d in rest["decisions"]] == [ids["draft"], ids["final"]]


def test_decision_shows_rationale_supports_and_history(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    ids = asyncio.run(_record(db))
    at = ("--project", "harbor", "--db", str(db))

    shown = run_cli("decision", ids["funder"], *at)
    assert shown.code == 0, shown.err
    assert f"[needs_review] {ids['funder']} funder: The Ocean Trust funds ReefWatch" in shown.out
    assert "The funding page names it." in shown.out  # the rationale
    assert "document 'funding' changed" in shown.out
    assert "#0 passage passage:" in shown.out and "('funding' v1)" in shown.out and "names the funder" in shown.out
    assert f"History: 1 support(s) of decision {ids['funder']}" in shown.out
    final = run_cli("decision", ids["final"], *at)
    assert f"supersedes {ids['draft']}" in final.out and "It is certain, not a maybe." in final.out

    data = run_cli("decision", ids["scope"], *at, "--json").json()
    assert data["decision"]["id"] == ids["scope"] and data["decision"]["state"] == "needs_review"
    assert [s["ref"] for s in data["support_history"]] == [ids["funder"]]


def test_unknown_ids_tasks_projects_and_bad_options_are_said_plainly(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    ids = asyncio.run(_record(db))
    at = ("--db", str(db))

    unknown = run_cli("decision", "00000000-0000-4000-8000-000000000000", "--project", "harbor", *at)
    assert unknown.code == 1 and unknown.out == ""
    assert "project 'harbor' has no decision 00000000-" in unknown.err and "evigraph decisions" in unknown.err
    assert len(unknown.err.strip().splitlines()) == 1
    other = run_cli("decision", ids["funder"], "--project", "elsewhere", *at)
    assert other.code == 1 and "has no decision" in other.err  # another project's decision is not there
    malformed = run_cli("decision", "nope", "--project", "harbor", *at)
    assert malformed.code == 1 and "invalid decision id: ID" in malformed.err

    no_task = run_cli("decisions", "--project", "harbor", "--task", "nope", *at)
    assert no_task.code == 1 and "no task 'nope'" in no_task.err
    empty = run_cli("decisions", "--project", "nobody", *at)
    assert (
        empty.code == 0
        and empty.out.strip() == "project 'nobody' has no standing decisions (a task's history: --task NAME)"
    )
    calm = run_cli("decisions", "--project", "elsewhere", "--review", *at)
    assert calm.code == 0 and "has no decisions that need review" in calm.out

    for limit in ("0", "101"):
        bad = run_cli("decisions", "--project", "harbor", "--limit", limit, *at)
        assert bad.code == 1 and "invalid decisions options: --limit" in bad.err and "1 to 100" in bad.err
    after = run_cli("decisions", "--project", "harbor", "--after", ids["funder"], *at)
    assert after.code == 1 and "--task NAME or --review" in after.err
    missing = run_cli("decisions", *at)
    assert missing.code == 2 and "--project" in missing.err
    missing_one = run_cli("decision", ids["funder"], *at)
    assert missing_one.code == 2 and "--project" in missing_one.err
