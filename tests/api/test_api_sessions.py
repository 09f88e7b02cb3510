"""Evidence numbers per session over REST: the X-Evigraph-Session header names one, as over MCP.

Two sessions number their evidence apart (each from 1), and a number is valid only in the
session it was handed out in; the same session keeps its numbers across connections.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.api.conftest import call_tool, error_of, rest_client, serving
from tests.mcp.conftest import QUESTION, HttpServer, copy_db, numbers

pytestmark = pytest.mark.slow
OTHER = "What does the ReefWatch camera network watch?"


def cited(check: dict[str, Any], n: int) -> bool:
    """Whether check_citations took [n] as the session's evidence ("cited") or refused it ("invalid")."""
    assert (n in check["cited"]) != (n in check["invalid"]), check
    return n in check["cited"]


async def test_two_sessions_number_apart(api_server: HttpServer) -> None:
    async with rest_client(api_server, session="alice") as a, rest_client(api_server, session="bob") as b:
        got_a, got_b = await asyncio.gather(
            call_tool(a, "retrieve", {"question": QUESTION}),
            call_tool(b, "retrieve", {"question": OTHER, "top_k": 1, "paths": ["passages"]}),
        )
        only_a = max(numbers(got_a))
        assert numbers(got_b) == [1] and only_a > 1  # each session starts at 1
        answer = f"Marta Oliveira founded Harbor Lab [{only_a}]."
        assert cited(await call_tool(a, "check_citations", {"answer": answer}), only_a)
        refused = await call_tool(b, "check_citations", {"answer": answer})
        assert not cited(refused, only_a) and refused["grounded"] is False
        first_a, first_b = await asyncio.gather(
            call_tool(a, "check_citations", {"answer": "See [1]."}),
            call_tool(b, "check_citations", {"answer": "See [1]."}),
        )
        assert first_a["sources"][0]["content"] != first_b["sources"][0]["content"]  # [1] differs per session


async def test_a_session_keeps_its_numbers_across_connections(api_server: HttpServer) -> None:
    async with rest_client(api_server, session="carol") as first:
        before = numbers(await call_tool(first, "retrieve", {"question": QUESTION, "top_k": 2}))
    async with rest_client(api_server, session="carol") as again:  # a new connection, the same session
        assert cited(await call_tool(again, "check_citations", {"answer": f"In Lisbon [{before[-1]}]."}), before[-1])
        after = numbers(await call_tool(again, "retrieve", {"question": OTHER, "top_k": 2, "paths": ["passages"]}))
    assert max(after) > max(before)  # the numbering goes on where it was


async def test_an_active_session_keeps_its_numbers_however_many_others_come(api_server: HttpServer) -> None:
    """1,200 other sessions (the old bound was 1,000 sessions by count) leave a session in use alone."""
    async with rest_client(api_server, session="dana") as dana:
        n = max(numbers(await call_tool(dana, "retrieve", {"question": QUESTION})))
        async with rest_client(api_server) as others:
            for i in range(1200):
                response = await others.post(
                    "/api/tools/check_citations", json={"answer": "Nothing."}, headers={"X-Evigraph-Session": f"x{i}"}
                )
                assert response.status_code == 200
        assert cited(await call_tool(dana, "check_citations", {"answer": f"Marta Oliveira founded it [{n}]."}), n)


@pytest.mark.parametrize(
    ("setting", "cause"),
    [
        ({"EVIGRAPH_SESSION_IDLE_MINUTES": "0"}, "sessions idle for 0 s are forgotten"),
        ({"EVIGRAPH_SESSION_MEMORY_MB": "0.01"}, "least recently used"),
    ],
    ids=["idle", "memory"],
)
async def test_a_forgotten_sessions_numbers_say_it_expired(
    sample_db: Path, tmp_path: Path, setting: dict[str, str], cause: str
) -> None:
    db = copy_db(sample_db, tmp_path)
    with serving(tmp_path, "--db", str(db), env=setting) as server:
        async with rest_client(server, session="erin") as erin, rest_client(server, session="finn") as finn:
            old = numbers(await call_tool(erin, "retrieve", {"question": QUESTION}))
            await call_tool(finn, "retrieve", {"question": OTHER})  # erin is forgotten meanwhile
            check = await call_tool(erin, "check_citations", {"answer": f"Marta Oliveira founded it [{old[0]}]."})
            assert not cited(check, old[0])
            assert f"[{old[0]}] was evidence of this session before it expired" in check["hint"]
            assert cause in check["hint"] and "run the reads again" in check["hint"]
            refused = error_of(await erin.post("/api/tools/read_passages", json={"passages": [old[0]]}), 400)
            assert "before it expired: the server forgot it after" in refused["error"] and cause in refused["error"]
            assert "run the reads again (retrieve" in refused["error"]  # the hint, in the same line
            again = numbers(await call_tool(erin, "retrieve", {"question": QUESTION}))
            assert min(again) > max(old)  # new numbers, never an old one pointing at other evidence
