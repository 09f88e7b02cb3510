"""Evidence numbers per client over HTTP and SSE: one client can never cite another's evidence."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client
from tests.mcp.conftest import QUESTION, HttpServer, call, citations, http_client, numbers, sse_mcp_client

pytestmark = pytest.mark.slow
OTHER = "What does the ReefWatch camera network watch?"


def valid(check: dict[str, Any], n: int) -> bool:
    """Whether check_citations took [n] as this session's evidence ("cited") or refused it ("invalid")."""
    assert (n in check["cited"]) != (n in check["invalid"]), check
    return n in check["cited"]


async def own_and_foreign(a: Client, b: Client) -> None:
    """A and B retrieve at the same time; a number only A received is valid for A, invalid for B."""
    got_a, got_b = await asyncio.gather(
        call(a, "retrieve", {"question": QUESTION}),
        call(b, "retrieve", {"question": OTHER, "top_k": 1, "paths": ["passages"]}),
    )
    a_numbers, b_numbers = numbers(got_a), numbers(got_b)
    assert b_numbers == [1]  # each client's numbering starts at 1
    only_a = max(a_numbers)
    assert only_a > 1 and only_a not in b_numbers

    answer = f"Marta Oliveira founded Harbor Lab [{only_a}]."
    check_a, check_b = await asyncio.gather(citations(a, answer), citations(b, answer))
    assert valid(check_a, only_a)
    assert not valid(check_b, only_a) and check_b["grounded"] is False

    # The same number [1] names different evidence in each session.
    first_a, first_b = await asyncio.gather(citations(a, "See [1]."), citations(b, "See [1]."))
    assert first_a["sources"][0]["content"] != first_b["sources"][0]["content"]


async def test_two_http_clients_at_once(http_server: HttpServer) -> None:
    async with http_client(http_server.url) as a, http_client(http_server.url) as b:
        await own_and_foreign(a, b)


async def test_two_sse_clients_at_once(sse_server: HttpServer) -> None:
    async with sse_mcp_client(sse_server.url) as a, sse_mcp_client(sse_server.url) as b:
        await own_and_foreign(a, b)


async def test_a_client_keeps_its_evidence_when_its_connection_changes(http_server: HttpServer) -> None:
    """HTTP clients drop idle connections after a few seconds; that must not forget their evidence.

    Without keep-alive every request comes on a new TCP connection, which is what an agent that
    thinks for a while between retrieve and check_citations looks like to the server.
    """
    async with http_client(http_server.url, keepalive=False) as client:
        n = numbers(await call(client, "retrieve", {"question": QUESTION}))[0]
        assert valid(await citations(client, f"Harbor Lab is in Lisbon [{n}]."), n)


async def test_stateless_clients_are_told_apart(http_server: HttpServer) -> None:
    """Clients pinned to the stateless 2026 protocol: by connection, or by an X-Evigraph-Session header."""
    modern = "2026-07-28"
    async with http_client(http_server.url, mode=modern) as a, http_client(http_server.url, mode=modern) as b:
        await own_and_foreign(a, b)

    header = {"X-Evigraph-Session": "window-1"}
    async with http_client(http_server.url, header, keepalive=False, mode=modern) as client:
        n = max(numbers(await call(client, "retrieve", {"question": QUESTION})))
        assert valid(await citations(client, f"Harbor Lab is in Lisbon [{n}]."), n)
    async with http_client(http_server.url, {"X-Evigraph-Session": "window-2"}, mode=modern) as other:
        assert not valid(await citations(other, f"Harbor Lab is in Lisbon [{n}]."), n)
