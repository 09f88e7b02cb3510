"""`evigraph serve --db-dir --max-open N`: at most N knowledge bases open, the least recently used
idle one closed past it (never one a request is using), and reopened by the next request naming it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.api.conftest import call_tool, rest_client, serving
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply
from tests.mcp.conftest import QUESTION, HttpServer, copy_db, numbers
from tests.mcp.conftest import sample_db as sample_db  # the session fixture, shared with the MCP tests

pytestmark = pytest.mark.slow
NAMES = ("alpha", "beta", "gamma")


class HeldAnswers:
    """An LLM whose answers wait until released: a request on a knowledge base stays in flight meanwhile."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, request: Request) -> Reply | None:
        if request.method != "POST":
            return None
        self.release.wait(timeout=120)
        return chat_reply("Marta Oliveira founded Harbor Lab [1].")


@pytest.fixture
def held() -> Iterator[tuple[ReplayServer, HeldAnswers]]:
    answers = HeldAnswers()
    with ReplayServer(answer=answers) as llm:
        yield llm, answers
        answers.release.set()


@pytest.fixture
def bounded(sample_db: Path, tmp_path: Path, held: tuple[ReplayServer, HeldAnswers]) -> Iterator[HttpServer]:
    for name in NAMES:
        copy_db(sample_db, tmp_path, f"{name}.db")
    env = {"EVIGRAPH_LLM_BASE_URL": held[0].url, "EVIGRAPH_LLM_MODEL": "test-model"}
    with serving(tmp_path, "--db-dir", str(tmp_path), "--max-open", "2", env=env) as server:
        yield server


async def opened(server: HttpServer) -> list[str]:
    async with rest_client(server) as client:
        return [d["name"] for d in (await client.get("/api/dbs")).json()["dbs"] if d["open"]]


async def test_the_least_recently_used_closes_and_reopens_on_the_next_request(bounded: HttpServer) -> None:
    assert "at most 2 open at once" in bounded.stderr()
    async with rest_client(bounded, session="gil", headers={"X-Evigraph-Db": "alpha"}) as alpha:
        old = numbers(await call_tool(alpha, "retrieve", {"question": QUESTION}))
        for name in ("beta", "gamma"):
            assert (await call_tool(alpha, "status", db=name))["documents"] == 3
        assert await opened(bounded) == ["beta", "gamma"]  # alpha, the least recently used, was closed

        assert (await call_tool(alpha, "status"))["documents"] == 3  # reopened, and it answers
        found = await call_tool(alpha, "search_passages", {"query": "Harbor Lab founded"})
        assert any("Marta Oliveira" in hit["text"] for hit in found["hits"])
        assert await opened(bounded) == ["alpha", "gamma"]
        check = await call_tool(alpha, "check_citations", {"answer": f"Marta Oliveira founded it [{old[0]}]."})
        assert old[0] in check["invalid"] and "its knowledge base was closed" in check["hint"]
        again = numbers(await call_tool(alpha, "retrieve", {"question": QUESTION}))
        assert min(again) > max(old)  # the old numbers point at nothing, never at other evidence


async def test_a_knowledge_base_with_a_request_in_flight_is_never_closed(
    bounded: HttpServer, held: tuple[ReplayServer, HeldAnswers]
) -> None:
    """Answers on alpha and beta wait for the LLM while gamma is opened: neither is closed under them,
    so three are open, over the bound, until they are done."""
    llm, answers = held
    async with rest_client(bounded) as client:
        asking = [
            asyncio.create_task(client.post("/api/tools/answer", params={"db": name}, json={"question": QUESTION}))
            for name in ("alpha", "beta")
        ]
        while len(llm.chat_requests()) < 2:  # both answers are being written: both requests are in flight
            assert not any(task.done() for task in asking), [(await t).text for t in asking if t.done()]
            await asyncio.sleep(0.05)
        assert (await call_tool(client, "status", db="gamma"))["documents"] == 3
        assert await opened(bounded) == ["alpha", "beta", "gamma"]
        answers.release.set()
        for response in await asyncio.gather(*asking):
            assert response.status_code == 200, response.text
            assert response.json()["answer"] == "Marta Oliveira founded Harbor Lab [1]."
    assert len(await opened(bounded)) == 2  # back within the bound once they were done
