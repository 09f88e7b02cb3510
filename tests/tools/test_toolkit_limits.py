"""Operator limits (`KnowledgeBase(limits=...)`) through Python and the tools: the bounds an agent sees and
gets, snippets, response size, the read deadline, and bad values refused with the fix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.tools.conftest import run

from evigraph import ConfigurationError, KnowledgeBase, Limits, RetrievalStrategy, ToolError, Toolkit
from evigraph.retrieval.query import RetrieveInput
from evigraph.retrieval.result import RetrievalResult
from evigraph.retrieval.strategy import RetrievalContext
from evigraph.serving.backend import LocalBackend
from evigraph.tools.passage_tools import PassageReadResult, PassageSearchResult

TIGHT = {"max_hits": 3, "max_fetch_ids": 2, "max_fetch_chars": 120, "max_snippet_chars": 60}


def schema(tk: Toolkit, tool: str) -> dict[str, Any]:
    spec = next(s for s in tk.tool_specs() if s.name == tool)
    props: dict[str, Any] = spec.input_schema["properties"]
    return props


async def test_defaults_are_the_bounds_evigraph_had(kb: KnowledgeBase) -> None:
    assert Limits().model_dump() == {
        "max_hits": 50,
        "max_fetch_ids": 20,
        "max_fetch_chars": 20_000,
        "max_snippet_chars": 400,
        "max_response_chars": 40_000,
        "read_deadline_seconds": 30.0,
    }
    tk = Toolkit(kb, read_only=True)
    assert schema(tk, "search_passages")["limit"]["maximum"] == 50
    assert schema(tk, "retrieve")["top_k"]["maximum"] == 50
    assert schema(tk, "search_themes")["limit"]["maximum"] == 10
    assert schema(tk, "read_passages")["passages"]["maxItems"] == 20
    assert schema(tk, "read_passages")["max_chars"] == {**schema(tk, "read_passages")["max_chars"], "maximum": 20_000}
    assert LocalBackend(tk).max_chars == 40_000


async def test_configured_limits_bound_what_an_agent_sees_and_gets(built_corpus: tuple[Path, Path]) -> None:
    async with KnowledgeBase(built_corpus[0], limits=TIGHT) as kb:
        tk = Toolkit(kb, read_only=True)
        assert tk.limits.max_hits == 3
        for tool, field in (("search_passages", "limit"), ("search_entities", "limit"), ("retrieve", "top_k")):
            assert schema(tk, tool)[field]["maximum"] == 3
            assert schema(tk, tool)[field]["default"] == 3  # a default above the limit comes down to it
        assert schema(tk, "search_themes")["limit"]["maximum"] == 3
        assert schema(tk, "read_passages")["passages"]["maxItems"] == 2
        assert schema(tk, "navigate_document")["max_chars"]["maximum"] == 120
        assert "(up to 2)" in next(s for s in tk.tool_specs() if s.name == "read_passages").description

        with pytest.raises(ToolError) as refused:
            await tk.call("search_passages", {"query": "Acme", "limit": 4})
        assert "less than or equal to 3" in refused.value.message
        assert "the server's max_hits" in refused.value.hint

        found = await run(tk, "search_passages", {"query": "Acme robot", "mode": "lexical"}, PassageSearchResult)
        assert 0 < len(found.hits) <= 3
        assert all(len(h.text) <= 62 for h in found.hits), [h.text for h in found.hits]  # the snippet, with its …

        with pytest.raises(ToolError, match="at most 2 items"):
            await tk.call("read_passages", {"passages": [h.n for h in found.hits][:1] * 3})
        read = await run(tk, "read_passages", {"passages": [found.hits[0].n]}, PassageReadResult)
        assert len(read.passages[0].text) <= 120 + 20  # cut to max_chars, with its cut marker

        with pytest.raises(ToolError, match="less than or equal to 3"):
            await tk.call("retrieve", {"question": "Who founded Acme Robotics?", "top_k": 5})


async def test_snippet_length_holds_in_python_reads(built_corpus: tuple[Path, Path]) -> None:
    async with KnowledgeBase(built_corpus[0], limits=Limits(max_snippet_chars=60)) as kb:
        hits = (await kb.search_passages("Lifter units depot", mode="lexical", limit=5)).hits
        entities = (await kb.search_entities("Acme Robotics Corp", mode="lexical")).hits
    assert hits and all(len(h.text) <= 62 for h in hits)
    support = [p.text for e in entities for p in e.support]
    assert support and all(len(t) <= 62 for t in support)


async def test_response_size_follows_the_limit(built_corpus: tuple[Path, Path]) -> None:
    """30,000 characters of JSON at the default limit, shortened to 10,000 (the least allowed: a
    result cut to one item of each list and short texts still needs a few thousand)."""
    question = {"question": "Lifter units shipped to depots", "top_k": 50}
    async with KnowledgeBase(built_corpus[0], limits={"max_response_chars": 10_000}) as kb:
        backend = LocalBackend(Toolkit(kb, read_only=True))
        reply = await backend.call("client", "retrieve", question)
    assert not reply.error and reply.data is not None
    assert reply.data["truncated"] is True
    assert 5_000 < len(json.dumps(reply.data, ensure_ascii=False)) <= 10_000
    assert "10,000 characters" in reply.data["hint"]


class SlowRetrieval(RetrievalStrategy):
    """A retrieval that takes longer than any deadline a test sets."""

    name = "slow"

    async def search(self, query: RetrieveInput, context: RetrievalContext, passages: int) -> RetrievalResult:
        await asyncio.sleep(30)
        return RetrievalResult(question=query.question)


async def test_a_read_over_the_deadline_is_stopped_with_the_setting_named(built_corpus: tuple[Path, Path]) -> None:
    limits = Limits(read_deadline_seconds=0.3)
    async with KnowledgeBase(built_corpus[0], retrieval=SlowRetrieval(), limits=limits) as kb:
        tk = Toolkit(kb, read_only=True)
        started = asyncio.get_running_loop().time()
        with pytest.raises(ToolError) as stopped:
            await tk.call("retrieve", {"question": "Who founded Acme Robotics?"})
        assert asyncio.get_running_loop().time() - started < 5
        assert stopped.value.message == "retrieve ran past the read deadline of 0.3 s and was stopped"
        assert "read_deadline_seconds" in stopped.value.hint and "EVIGRAPH_READ_DEADLINE_SECONDS" in stopped.value.hint
        # A read within the deadline runs as before, and Cypher's engine limit says the deadline.
        assert (await run(tk, "search_passages", {"query": "Acme"}, PassageSearchResult)).hits
        cypher = next(s for s in tk.tool_specs() if s.name == "cypher_query")
        assert "a 0.3 s time limit" in cypher.description


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"max_hits": 0}, ["max_hits=0", "greater than or equal to 1", "--max-hits", "EVIGRAPH_MAX_HITS"]),
        ({"max_fetch_chars": -5}, ["max_fetch_chars=-5", "from 1 to 1000000"]),
        ({"read_deadline_seconds": 0}, ["read_deadline_seconds=0", "above 0", "--read-deadline-seconds"]),
        ({"max_hits": 10**6}, ["max_hits=1000000", "less than or equal to 200"]),
        ({"max_response_chars": 10}, ["max_response_chars=10", "from 10000"]),
        ({"max_hit": 5}, ["unknown limit 'max_hit'", "max_hits"]),
        ({"max_hits": True}, ["max_hits=True", "a yes/no is not a number"]),
        ({"read_deadline_seconds": False}, ["read_deadline_seconds=False", "a yes/no is not a number"]),
    ],
)
def test_bad_values_are_refused_with_the_fix(values: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ConfigurationError) as refused:
        KnowledgeBase("unused.db", limits=values)
    said = str(refused.value)
    for word in words:
        assert word in said, (word, said)


def test_the_environment_is_read_and_flags_win() -> None:
    env = {"EVIGRAPH_MAX_HITS": "7", "EVIGRAPH_READ_DEADLINE_SECONDS": "2.5"}
    assert Limits.from_env(env) == Limits(max_hits=7, read_deadline_seconds=2.5)
    assert Limits.from_env(env, max_hits="4").max_hits == 4
    with pytest.raises(ConfigurationError, match="EVIGRAPH_MAX_SNIPPET_CHARS='many'"):
        Limits.from_env({"EVIGRAPH_MAX_SNIPPET_CHARS": "many"})


async def test_a_raised_max_hits_is_taken_by_retrieve_in_python_and_as_a_tool(built_corpus: tuple[Path, Path]) -> None:
    async with KnowledgeBase(built_corpus[0], limits=Limits(max_hits=100)) as kb:
        found = await kb.retrieve("Lifter units shipped to depots", top_k=80)
        assert found.passages
        tk = Toolkit(kb, read_only=True)
        assert schema(tk, "retrieve")["top_k"]["maximum"] == 100
        assert (await tk.call("retrieve", {"question": "Lifter units shipped to depots", "top_k": 80})).tool
        with pytest.raises(ConfigurationError) as refused:
            await kb.retrieve("Lifter units", top_k=101)
        assert "top_k: 1-100" in refused.value.hint


async def test_a_lowered_max_hits_bounds_retrieve_in_python(built_corpus: tuple[Path, Path]) -> None:
    async with KnowledgeBase(built_corpus[0], limits=Limits(max_hits=3)) as kb:
        with pytest.raises(ConfigurationError) as refused:
            await kb.retrieve("Who founded Acme Robotics?", top_k=40)
        assert "less than or equal to 3" in str(refused.value) and "top_k: 1-3" in refused.value.hint
        found = await kb.retrieve("Who founded Acme Robotics?")  # the default, 10, comes down to the limit
        assert 0 < len(found.passages) <= 3


async def test_bounded_tools_and_their_specs_are_made_once(built_corpus: tuple[Path, Path]) -> None:
    """Every MCP tools/list asked for the specs and every call bounded every tool again (ms of JSON
    Schema each time); limits are frozen, so each is made once and sessions share them."""
    async with KnowledgeBase(built_corpus[0], limits=TIGHT) as kb:
        tk = Toolkit(kb, read_only=True)
        first, again = tk.tools(), tk.tools()
        assert all(a is b for a, b in zip(first, again, strict=True))
        assert tk._tool("retrieve") is next(t for t in first if t.name == "retrieve")
        specs = tk.tool_specs()
        assert all(a is b for a, b in zip(specs, tk.new_session().tool_specs(), strict=True))
        assert all(a is b for a, b in zip(specs, LocalBackend(tk).specs(), strict=True))
        assert schema(tk, "retrieve")["top_k"]["maximum"] == 3
