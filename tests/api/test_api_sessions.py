"""Evidence numbers per session over REST: the X-Evigraph-Session header names one, as over MCP.

Two sessions number their evidence apart (each from 1), and a number is valid only in the
session it was handed out in; the same session keeps its numbers across connections.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.api.conftest import call_tool, rest_client
from tests.mcp.conftest import QUESTION, HttpServer, numbers

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
