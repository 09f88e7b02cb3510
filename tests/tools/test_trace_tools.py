"""The task tools in process: offered only with a project and an agent, results that render for an LLM,
and no evidence numbers, since trace records are the agent's notes, not evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.tools.registry import trace_tool_names


async def test_task_tools_need_a_project_and_an_agent(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        assert not {t.name for t in Toolkit(kb).tools()} & trace_tool_names()
        with pytest.raises(ToolError, match="given project= but no agent=") as no_agent:
            Toolkit(kb, project="p")
        assert "pass agent= too" in no_agent.value.hint
        with pytest.raises(ToolError, match="given agent= but no project="):
            Toolkit(kb, read_only=False, agent="a")
        with pytest.raises(ToolError, match="project"):
            Toolkit(kb, project="", agent="a")
        reads = {t.name for t in Toolkit(kb, read_only=True, project="p", agent="a").tools()} & trace_tool_names()
        assert reads == {
            "get_task",
            "list_events",
            "fetch_event",
            "list_steps",
            "get_decision",
            "list_decisions",
            "list_support_history",
            "search_decisions",
            "list_conflicts",
            "list_decisions_for_review",
        }
        with pytest.raises(ToolError, match="not offered"):
            await Toolkit(kb).call("get_task", {"task_name": "t"})


async def test_task_tools_record_and_render_without_evidence_numbers(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb, project="p", agent="a")
        await tk.call("create_task", {"task_name": "t", "goal": "Find the funders"})
        long = "x" * 9000
        await tk.call("record_event", {"task_name": "t", "kind": "tool_result", "payload": long, "name": "retrieve"})
        await tk.call("set_step", {"task_name": "t", "name": "read", "state": "in_progress"})
        view = await tk.call("get_task", {"task_name": "t", "events": 1})
        text = view.to_llm_text()
        assert "Find the funders" in text and "in_progress 1" in text and "#1 tool_result (retrieve)" in text
        assert "x" * 100 not in text  # the view lists events without their bodies
        body = (await tk.call("fetch_event", {"task_name": "t", "seq": 1})).to_llm_text(max_chars=2000)
        assert len(body) <= 2000 and "body cut to fit" in body
        assert len(tk.ledger) == 0  # nothing was numbered as evidence
        with pytest.raises(ToolError, match="invalid arguments"):
            await tk.call("get_task", {"task_name": "t", "events": 51})
        with pytest.raises(ToolError, match="invalid arguments"):
            await tk.call("get_task", {"task_name": "t", "project": "q"})  # the project is not an argument
