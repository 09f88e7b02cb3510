"""Decisions over MCP through the SDK's own client, end to end as an agent and a person meet them:
record on passages read whole, resume after a restart, a source edited and re-ingested through the
CLI flags the decision and what rests on it, reaffirming with the current text clears the flag, and
retries are answered once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client
from tests.conftest import run_cli
from tests.mcp.conftest import call, error_text, stdio_mcp_client

AS_AGENT = ("--project", "harbor", "--agent", "analyst", "--allow-writes")
FUNDING = "# Funding\n\nReefWatch is funded by the Harbour Trust. The grant covers two survey boats.\n"
PEOPLE = "# People\n\nMarta Oliveira leads ReefWatch from Porto and reports to the trust every quarter.\n"


def corpus(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "funding.md").write_text(FUNDING, encoding="utf-8")
    (docs / "people.md").write_text(PEOPLE, encoding="utf-8")
    db = tmp_path / "kb.db"
    done = run_cli("ingest", str(docs), "--db", str(db), "--extractor", "rules", "--embedder", "none")
    assert done.code == 0, done.err
    return docs, db


async def read_funding_passage(client: Client) -> int:
    """Search, then read the funding passage whole: the number a decision may rest on."""
    hits = (await call(client, "search_passages", {"query": "Who funds ReefWatch?", "mode": "lexical"}))["hits"]
    n = next(h["n"] for h in hits if h["source"]["title"] == "Funding")
    await call(client, "read_passages", {"passages": [n]})
    return int(n)


def decision(n: int, request_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_name": "funding",
        "choice_key": "funder",
        "conclusion": "The Harbour Trust funds ReefWatch",
        "rationale": "The funding page names the trust.",
        "supports": [{"kind": "passage", "evidence": n}],
        "assumptions": [],
        "open_questions": ["Does the grant continue after 2027?"],
        "request_id": request_id,
        **extra,
    }


async def test_a_decision_outlives_the_session_and_is_flagged_when_its_source_changes(tmp_path: Path) -> None:
    docs, db = corpus(tmp_path)
    async with stdio_mcp_client(db, *AS_AGENT) as client:
        await call(
            client, "create_task", {"task_name": "funding", "goal": "Find who funds ReefWatch", "request_id": "t1"}
        )
        await call(client, "create_task", {"task_name": "report", "goal": "Write the report", "request_id": "t2"})
        hits = (await call(client, "search_passages", {"query": "Marta Oliveira", "mode": "lexical"}))["hits"]
        unread = next(h["n"] for h in hits if h["source"]["title"] == "People")
        assert "not read in full" in await error_text(client, "record_decision", decision(unread, "d0"))

        n = await read_funding_passage(client)
        first = (await call(client, "record_decision", decision(n, "d1")))["decision"]
        assert first["state"] == "active" and first["supports"][0]["version"] == 1
        retried = (await call(client, "record_decision", decision(n, "d1")))["decision"]
        assert retried == first  # the saved result, nothing written twice
        listed = (await call(client, "list_decisions", {"task_name": "funding"}))["decisions"]
        assert [d["id"] for d in listed] == [first["id"]]
        other = decision(n, "d1", conclusion="Nobody funds ReefWatch")
        assert "request_id 'd1' was already used" in await error_text(client, "record_decision", other)

        rests = [{"kind": "decision", "decision_id": first["id"]}]
        credit = decision(n, "d2", task_name="report", choice_key="credit", conclusion="Credit the trust")
        second = (await call(client, "record_decision", credit | {"supports": rests}))["decision"]
        rival = decision(n, "d3", task_name="report", conclusion="The city funds ReefWatch")
        third = (await call(client, "record_decision", rival))["decision"]
        conflicts = (await call(client, "list_conflicts", {}))["conflicts"]
        assert {d["id"] for d in conflicts["funder"]} == {first["id"], third["id"]}
        await call(
            client,
            "supersede_decision",
            {
                "decision_id": third["id"],
                "conclusion": "The Harbour Trust funds ReefWatch",
                "rationale": "Read again: the page names the trust.",
                "explanation": "The city was a misreading.",
                "supports": [{"kind": "passage", "evidence": n}],
                "assumptions": [],
                "open_questions": [],
                "request_id": "d4",
            },
        )
        assert (await call(client, "list_conflicts", {}))["conflicts"] == {}

    async with stdio_mcp_client(db, *AS_AGENT) as client:  # a later session resumes from what was established
        view = await call(client, "get_task", {"task_name": "funding"})
        assert [d["id"] for d in view["decisions"]] == [first["id"]]
        precedents = (await call(client, "search_decisions", {"query": "who funds ReefWatch"}))["decisions"]
        assert first["id"] in {d["id"] for d in precedents} and {d["task"] for d in precedents} == {"funding", "report"}
    async with stdio_mcp_client(db, "--project", "elsewhere", "--agent", "analyst") as client:
        assert (await call(client, "search_decisions", {"query": "who funds ReefWatch"}))["decisions"] == []

    (docs / "funding.md").write_text(FUNDING.replace("two survey boats", "three survey boats"), encoding="utf-8")
    done = run_cli("ingest", str(docs), "--db", str(db), "--extractor", "rules", "--embedder", "none")
    assert done.code == 0, done.err

    async with stdio_mcp_client(db, *AS_AGENT) as client:
        flagged = await call(client, "get_decision", {"decision_id": first["id"]})
        assert flagged["decision"]["state"] == "needs_review"
        cause = flagged["decision"]["review"][0]
        assert (cause["change"], cause["document"], cause["read_version"], cause["now_version"]) == (
            "new_version",
            f"file:{docs.resolve().name}/funding.md",
            1,
            2,
        )
        step = (await call(client, "continue_decision_review", {"limit": 10}))["progress"]
        assert step["remaining"] == 0
        resting = (await call(client, "get_decision", {"decision_id": second["id"]}))["decision"]
        assert resting["state"] == "needs_review" and resting["review"][0]["decision"] == first["id"]
        review = (await call(client, "list_decisions_for_review", {}))["decisions"]
        assert {first["id"], second["id"]} <= {d["id"] for d in review}

        stale = {"decision_id": first["id"], "evidence_ids": [n], "explanation": "Still true.", "request_id": "r0"}
        assert "not evidence of this session" in await error_text(client, "reaffirm_decision", stale)
        fresh = await read_funding_passage(client)
        reaffirm = stale | {"evidence_ids": [fresh], "request_id": "r1"}
        settled = (await call(client, "reaffirm_decision", reaffirm))["decision"]
        assert settled["state"] == "active" and settled["supports"][0]["version"] == 2
        assert (await call(client, "reaffirm_decision", reaffirm))["decision"] == settled
        history = (await call(client, "list_support_history", {"decision_id": first["id"]}))["supports"]
        assert [(s["version"], s["current"]) for s in history] == [(1, False), (2, True)]


async def test_a_steps_supports_are_a_decisions_and_outlive_the_session(tmp_path: Path) -> None:
    _, db = corpus(tmp_path)
    step: dict[str, Any] = {"task_name": "funding", "name": "read", "state": "completed", "result": "The trust."}
    async with stdio_mcp_client(db, *AS_AGENT) as client:
        await call(client, "create_task", {"task_name": "funding", "goal": "Find who funds ReefWatch"})
        hits = (await call(client, "search_passages", {"query": "Marta Oliveira", "mode": "lexical"}))["hits"]
        unread = next(h["n"] for h in hits if h["source"]["title"] == "People")
        refused = await error_text(client, "set_step", step | {"supports": [{"kind": "passage", "evidence": unread}]})
        assert "not read in full" in refused and "read_passages" in refused
        n = await read_funding_passage(client)
        too_many = await error_text(client, "set_step", step | {"supports": [{"kind": "passage", "evidence": n}] * 21})
        assert "supports" in too_many and "20" in too_many
        missing = {"kind": "decision", "decision_id": "00000000-0000-4000-8000-000000000000"}
        assert "no decision" in await error_text(client, "set_step", step | {"supports": [missing]})
        cited = step | {
            "supports": [{"kind": "passage", "evidence": n, "note": "names the funder"}],
            "request_id": "s1",
        }
        made = (await call(client, "set_step", cited))["step"]
        assert (await call(client, "set_step", cited))["step"] == made  # a retry is answered once
        [support] = made["supports"]
        assert (support["kind"], support["version"], support["note"]) == ("passage", 1, "names the funder")
    async with stdio_mcp_client(db, *AS_AGENT) as client:
        [listed] = (await call(client, "list_steps", {"task_name": "funding", "state": "completed"}))["steps"]
        assert listed["supports"] == [support] and listed["result_event_seq"] == 1
