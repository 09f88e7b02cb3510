"""The task tools over MCP, through the SDK's own client: served only with a project and an agent,
writes only when the server writes, records kept across a restart, retries answered once, and every
argument bounded in the schema clients see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mcp.conftest import READ_TOOLS, call, error_text, stdio_mcp_client
from tests.mcp.test_mcp_defaults import mcp_exit

TRACE_READS = {"get_task", "list_events", "fetch_event", "list_steps"} | {
    "get_decision",
    "list_decisions",
    "list_support_history",
    "search_decisions",
    "list_conflicts",
    "list_decisions_for_review",
}
TRACE_WRITES = {"create_task", "record_event", "set_step"} | {
    "record_decision",
    "supersede_decision",
    "reaffirm_decision",
    "continue_decision_review",
}
AS_AGENT = ("--project", "p", "--agent", "a")


async def test_tasks_events_and_steps_survive_a_restart(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy, *AS_AGENT, "--allow-writes") as client:
        task = await call(client, "create_task", {"task_name": "funding", "goal": "Find who funds ReefWatch"})
        assert task["task"]["agent"] == "a" and task["task"]["events"] == 0
        event = await call(
            client, "record_event", {"task_name": "funding", "kind": "message", "payload": "Who?", "role": "user"}
        )
        assert event["event"]["seq"] == 1
        step = {"task_name": "funding", "name": "read sources", "state": "completed", "result": "Two grants."}
        assert (await call(client, "set_step", step))["step"]["result_event_seq"] == 2
    async with stdio_mcp_client(db_copy, *AS_AGENT, "--allow-writes") as client:
        view = await call(client, "get_task", {"task_name": "funding"})
        assert view["goal"] == "Find who funds ReefWatch" and view["events"] == 2
        assert view["steps"] == [{"state": "completed", "names": ["read sources"], "more": False}]
        assert [e["seq"] for e in view["latest_events"]] == [1, 2]
        assert all("payload" not in e for e in view["latest_events"])
        assert view["decisions"] == []  # none recorded yet
        body = await call(client, "fetch_event", {"task_name": "funding", "seq": 2})
        assert body["event"]["payload"] == "Two grants."
        steps = await call(client, "list_steps", {"task_name": "funding", "state": "completed"})
        assert [s["name"] for s in steps["steps"]] == ["read sources"]
        result = await client.call_tool("get_task", {"task_name": "funding"})
        assert "Find who funds ReefWatch" in result.content[0].text  # type: ignore[union-attr]


async def test_a_retried_request_writes_once_and_another_payload_is_refused(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy, *AS_AGENT, "--allow-writes") as client:
        await call(client, "create_task", {"task_name": "t", "goal": "g", "request_id": "c1"})
        asked = {"task_name": "t", "kind": "note", "payload": "once", "request_id": "r1"}
        first = await call(client, "record_event", asked)
        again = await call(client, "record_event", asked)
        assert again["event"] == first["event"]
        page = await call(client, "list_events", {"task_name": "t"})
        assert [e["seq"] for e in page["events"]] == [1]
        refused = await error_text(client, "record_event", {**asked, "payload": "other"})
        assert "r1" in refused or "request" in refused.lower()
        assert len((await call(client, "list_events", {"task_name": "t"}))["events"]) == 1


async def test_the_task_tools_follow_project_agent_and_read_only(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == READ_TOOLS and not names & (TRACE_READS | TRACE_WRITES)
    async with stdio_mcp_client(db_copy, *AS_AGENT) as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS | TRACE_READS
        assert "read-only" in await error_text(client, "create_task", {"task_name": "t", "goal": "g"})
    async with stdio_mcp_client(db_copy, *AS_AGENT, "--allow-writes") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= TRACE_READS | TRACE_WRITES and "reject_decision" not in tools
    env = {"EVIGRAPH_MCP_ALLOW_REJECT": "yes"}
    async with stdio_mcp_client(db_copy, *AS_AGENT, env=env) as client:  # a person's override, but read-only
        assert "reject_decision" not in {t.name for t in (await client.list_tools()).tools}
    async with stdio_mcp_client(db_copy, *AS_AGENT, "--allow-writes", env=env) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= TRACE_READS | TRACE_WRITES | {"reject_decision"}
        for name in TRACE_READS | TRACE_WRITES | {"reject_decision"}:
            schema = tools[name].input_schema
            assert "project" not in schema["properties"] and "agent" not in schema["properties"]
            _assert_bounded(name, schema, schema.get("$defs", {}))


async def test_project_and_agent_come_from_the_environment(db_copy: Path) -> None:
    env = {"EVIGRAPH_MCP_PROJECT": "p", "EVIGRAPH_MCP_AGENT": "a"}
    async with stdio_mcp_client(db_copy, env=env) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= TRACE_READS


def test_a_writable_server_missing_the_project_or_the_agent_refuses_to_start_naming_it(db_copy: Path) -> None:
    for args, env, missing, fix in (
        (("--allow-writes", "--project", "p"), {}, "project 'p' but no agent", "--agent NAME"),
        (("--allow-writes",), {"EVIGRAPH_MCP_AGENT": "a"}, "agent 'a' but no project", "EVIGRAPH_MCP_PROJECT"),
        (("--project", "p"), {}, "the server was given project 'p' but no agent", "EVIGRAPH_MCP_AGENT"),
        (
            ("--allow-writes",),
            {"EVIGRAPH_MCP_ALLOW_REJECT": "yes"},
            "reject_decision, which needs a project and an agent: both are missing",
            "--project NAME (or set EVIGRAPH_MCP_PROJECT) and --agent NAME",
        ),
    ):
        refused = mcp_exit(db_copy, *args, env=env)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert missing in refused.stderr and fix in refused.stderr, refused.stderr


def _assert_bounded(where: str, schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """Every string, array and integer a client may send has an upper bound (or is an enum), down
    through arrays' items, objects' properties and the models a schema refers to (a decision's supports)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return _assert_bounded(f"{where}<{name}>", defs[name], defs)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        for option in options:
            _assert_bounded(where, option, defs)
        return None
    kind = schema.get("type")
    if "enum" in schema or "const" in schema or kind in ("null", "boolean"):
        return None
    if kind == "object":
        assert schema.get("additionalProperties") is False, f"{where} accepts unknown fields"
        for prop, sub in schema["properties"].items():
            _assert_bounded(f"{where}.{prop}", sub, defs)
        return None
    bound = {"string": "maxLength", "array": "maxItems", "integer": "maximum"}.get(kind)
    assert bound is not None, f"{where}: unexpected type {kind}"
    assert bound in schema, f"{where} has no {bound}"
    if kind == "array":
        _assert_bounded(f"{where}[]", schema["items"], defs)
    return None


async def test_flags_win_over_the_environment_and_forwarders_match_project_and_agent(db_copy: Path) -> None:
    env = {"EVIGRAPH_MCP_PROJECT": "p", "EVIGRAPH_MCP_AGENT": "a"}
    async with stdio_mcp_client(db_copy, "--agent", "b", "--allow-writes", env=env) as client:
        made = await call(client, "create_task", {"task_name": "t", "goal": "g"})
        assert made["task"]["agent"] == "b"
        # a second server forwards to this one only with the same project and agent
        for project, agent, differs in (("q", "b", "another project"), ("p", "a", "another agent")):
            refused = mcp_exit(db_copy, "--project", project, "--agent", agent)
            assert refused.returncode == 2 and differs in refused.stderr, refused.stderr
        assert mcp_exit(db_copy, "--project", "p").returncode == 2  # both or neither
        async with stdio_mcp_client(db_copy, "--project", "p", "--agent", "b") as same:
            assert (await call(same, "get_task", {"task_name": "t"}))["goal"] == "g"
