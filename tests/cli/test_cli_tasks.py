"""`evigraph tasks` and `evigraph task NAME`: a person reads what agents recorded, as text or JSON."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import run_cli

from evigraph import KnowledgeBase


async def _record(db: Path) -> None:
    async with KnowledgeBase(db) as kb:
        traces = kb.traces("harbor", "analyst")
        await traces.create_task("funding", "Find who funds ReefWatch")
        await traces.create_task("audit", "Check the 2023 accounts")
        await traces.record_event("funding", "message", "Who funds ReefWatch?", role="user")
        await traces.set_step("funding", "read sources", "completed", result="Two grants found.")
        await traces.set_step("funding", "compare", "in_progress")
        await kb.traces("elsewhere", "analyst").create_task("hidden", "Not this project")


def test_tasks_and_task_show_a_project_s_records(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    asyncio.run(_record(db))

    listed = run_cli("tasks", "--project", "harbor", "--db", str(db))
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert [line.split()[0] for line in lines] == ["audit", "funding"]
    assert "Find who funds ReefWatch" in lines[1] and "2 event(s)" in lines[1]
    assert "hidden" not in listed.out
    paged = run_cli("tasks", "--project", "harbor", "--db", str(db), "--limit", "1", "--json").json()
    assert [t["name"] for t in paged["tasks"]] == ["audit"] and paged["next_after_name"] == "audit"

    shown = run_cli("task", "funding", "--project", "harbor", "--db", str(db))
    assert shown.code == 0, shown.err
    assert "Find who funds ReefWatch" in shown.out
    assert "read sources" in shown.out and "compare" in shown.out
    assert "#1 message (user)" in shown.out and "Two grants found." not in shown.out  # no event bodies
    view = run_cli("task", "funding", "--project", "harbor", "--db", str(db), "--json").json()
    assert view["goal"] == "Find who funds ReefWatch" and view["events"] == 2
    assert {g["state"]: g["names"] for g in view["steps"]} == {
        "in_progress": ["compare"],
        "completed": ["read sources"],
    }


def test_an_unknown_task_or_project_is_said_plainly(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    asyncio.run(_record(db))
    missing = run_cli("task", "nope", "--project", "harbor", "--db", str(db))
    assert missing.code == 1 and "no task 'nope'" in missing.err
    other = run_cli("task", "funding", "--project", "elsewhere", "--db", str(db))
    assert other.code == 1  # another project's task of the same name is not there
    empty = run_cli("tasks", "--project", "nobody", "--db", str(db))
    assert empty.code == 0 and "has no tasks" in empty.out
