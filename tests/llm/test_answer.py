"""Cited answers (`kb.answer`, `kb.answer_stream`, the `answer` tool) against the replay server and
a real Kuzu knowledge base: the model's `[n]` are checked, and a failed check is never a pass."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from tests.conftest import write_corpus
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply, stream_reply

from evigraph import KnowledgeBase, Limits, ToolError, Toolkit
from evigraph.errors import ConfigurationError, LLMConfigurationError, LLMTimeoutError
from evigraph.evidence.citations import check_citations
from evigraph.evidence.ledger import EvidenceLedger
from evigraph.kb.answers import NOT_FOUND_TEXT, SYSTEM_PROMPT, WEAK_NOTE, AnswerInput, judge
from evigraph.providers.llms import OpenAICompatibleLLM, Usage
from evigraph.tools.answer_tools import AnswerResult
from evigraph.tools.citation_tools import CitationResult
from evigraph.tools.passage_tools import RetrieveResult

QUESTION = "Who leads ReefWatch?"
LEADS = "Ana Costa leads ReefWatch"


async def _build(db: Path, corpus: Path) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        report = await kb.ingest([corpus])
        assert report.ok, report.failed


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three-document corpus (text, Markdown, PDF) ingested with the rule extractor, once."""
    base = tmp_path_factory.mktemp("answers")
    db = base / "kb.db"
    asyncio.run(_build(db, write_corpus(base / "docs")))
    return db


@pytest.fixture
async def kb(built: Path, llm: OpenAICompatibleLLM) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(built, read_only=True, llm=llm) as opened:
        yield opened


def shown(request: Request) -> dict[int, str]:
    """The evidence lines the model was sent, by number."""
    return {int(n): line for n, line in re.findall(r"^\[(\d+)\] (.*)$", request.prompt, re.MULTILINE)}


def cite(words: str, claim: str) -> Callable[[Request], Reply | None]:
    """An answer function: `claim [n]`, n being the number of the shown line that holds `words`."""

    def answer(request: Request) -> Reply | None:
        for n, line in shown(request).items():
            if words in line:
                return chat_reply(f"{claim} [{n}].", prompt_tokens=90, completion_tokens=9)
        return chat_reply(f"no line holds {words!r}")

    return answer


async def test_answer_citing_the_right_passage_is_verified(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    replay_server.answer = cite(LEADS, LEADS)
    answer = await kb.answer(QUESTION, top_k=3, max_answer_tokens=100)
    assert answer.status == "verified" and answer.verified, answer.verdict
    assert answer.verdict.startswith("verified")
    n = answer.citations.cited[0]
    assert answer.text == f"{LEADS} [{n}]."
    cited = answer.cited()
    assert [i.n for i in cited] == [n] and cited[0].evidence_id.startswith("passage:")
    assert all(i.n > 0 for i in answer.evidence()) and answer.passages[0].n == 1  # a fresh ledger: [1] first
    assert answer.usage == Usage(input_tokens=90, output_tokens=9, calls=1) and answer.model == "test-model"

    sent = replay_server.chat_requests()[-1]
    assert sent.body["max_tokens"] == 100 and sent.body["temperature"] == 0.0
    assert sent.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    user = sent.messages[1]["content"]
    assert user.startswith("Evidence:\n## Passages\n[1] ") and user.endswith(f"Question: {QUESTION}")
    assert "reefwatch.md" in user  # the one renderer: passage lines name their file, as `search` prints them
    assert WEAK_NOTE not in user


async def test_a_number_that_does_not_exist_fails_the_check(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply(f"{LEADS} [42]."))
    answer = await kb.answer(QUESTION, top_k=3)
    assert answer.status == "unverified" and not answer.verified
    assert answer.citations.invalid == [42] and not answer.citations.grounded
    assert answer.verdict.startswith("NOT verified") and "[42] is not evidence the model was shown" in answer.verdict
    assert answer.cited() == []


async def test_a_passage_that_does_not_support_the_sentence_fails_the_check(
    kb: KnowledgeBase, replay_server: ReplayServer
) -> None:
    replay_server.answer = cite(LEADS, "Tomas Reyes leads ReefWatch since 2011")
    answer = await kb.answer(QUESTION, top_k=3)
    assert answer.status == "unverified"
    assert answer.citations.grounded  # the number is real...
    assert answer.citations.unsupported[0]["missing"] == ["2011", "Tomas Reyes"]  # ...what it says is not there
    assert "lacking 2011, Tomas Reyes" in answer.verdict


async def test_an_uncited_claim_fails_the_check(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    replay_server.answer = cite(LEADS, f"{LEADS}. She joined Harbor Lab in 2019")
    answer = await kb.answer(QUESTION, top_k=3)
    # the citation follows the second sentence only: the first states names without one
    assert answer.status == "unverified" and answer.citations.uncited == [f"{LEADS}."]
    assert "states a name or figure without a citation" in answer.verdict


async def test_a_number_the_budget_left_out_is_not_evidence_for_the_model(
    kb: KnowledgeBase, replay_server: ReplayServer
) -> None:
    question = "Harbor Lab ReefWatch TideScope Lisbon"
    retrieved = await kb.retrieve(question, top_k=10)  # numbered as the answer's fresh ledger numbers them
    replay_server.queue(chat_reply("Harbor Lab is in Lisbon [1]."))
    answer = await kb.answer(question, top_k=10, max_context_tokens=200)
    given = {i.n for i in answer.evidence()}
    left_out = sorted({i.n for i in (*retrieved.passages, *retrieved.entities)} - given)
    assert given and left_out, "the budget should leave some retrieved evidence out"
    assert set(shown(replay_server.chat_requests()[-1])) == given

    replay_server.queue(chat_reply(f"Harbor Lab is in Lisbon [{left_out[0]}]."))
    answer = await kb.answer(question, top_k=10, max_context_tokens=200)
    assert answer.status == "unverified" and answer.citations.invalid == [left_out[0]]


async def test_weak_match_is_in_the_prompt_and_not_found_is_an_answer(
    kb: KnowledgeBase, replay_server: ReplayServer
) -> None:
    replay_server.queue(chat_reply("Who runs the Artemis base is not in the knowledge base."))
    answer = await kb.answer("Who runs the Artemis base near Lisbon?", top_k=3)
    assert answer.match is not None and answer.match.weak_match
    user = replay_server.chat_requests()[-1].messages[1]["content"]
    assert "Hint: weak match" in user and WEAK_NOTE in user
    assert answer.status == "not_found" and not answer.verified
    assert answer.citations.uncited == []  # saying the knowledge base lacks it needs no [n]
    assert answer.verdict.startswith("not in the knowledge base")


async def test_an_answer_citing_nothing_is_not_verified(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("It is run by a team of researchers."))
    answer = await kb.answer(QUESTION, top_k=3)
    assert answer.status == "unverified" and answer.verdict == "NOT verified: the answer cites no evidence"


async def test_nothing_retrieved_asks_no_model(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    answer = await kb.answer("qwxz vbnm", paths=["passages"])
    assert answer.text == NOT_FOUND_TEXT and answer.status == "not_found"
    assert answer.evidence() == [] and answer.usage == Usage()
    assert replay_server.calls() == 0


async def test_stream_yields_deltas_in_order_then_the_checked_answer(
    kb: KnowledgeBase, replay_server: ReplayServer
) -> None:
    replay_server.queue(stream_reply(["Ana Costa ", "leads ", "ReefWatch [1]."], usage=(80, 8), event_delay=0.3))
    started = time.monotonic()
    async with kb.answer_stream(QUESTION, top_k=3) as stream:
        first = await anext(stream)
        at_first = time.monotonic() - started
        rest = [d async for d in stream]
    assert [first, *rest] == ["Ana Costa ", "leads ", "ReefWatch [1]."]
    assert at_first < time.monotonic() - started - 0.5  # the first delta came before the last ones were sent
    result = stream.result
    assert result.text == "Ana Costa leads ReefWatch [1]." and result.status == "verified"
    assert result.usage == Usage(input_tokens=80, output_tokens=8, calls=1)
    assert replay_server.chat_requests()[-1].body["stream"] is True

    replay_server.queue(stream_reply(["Ana Costa leads ReefWatch [9]."]))
    async with kb.answer_stream(QUESTION, top_k=3) as stream:
        with pytest.raises(RuntimeError, match="has not ended"):
            _ = stream.result
        assert [d async for d in stream] == ["Ana Costa leads ReefWatch [9]."]
    assert stream.result.status == "unverified"


async def test_bad_options_are_refused_before_anything_runs(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    with pytest.raises(ConfigurationError) as info:
        kb.answer_stream(QUESTION, top_k=0, max_context_tokens=10)
    assert "top_k" in str(info.value) and "max_context_tokens" in str(info.value)
    assert "max_context_tokens: 200-32000" in info.value.hint
    with pytest.raises(ConfigurationError, match="question"):
        await kb.answer("x" * 2001)
    assert replay_server.calls() == 0


async def test_without_an_llm_the_error_names_the_fix(built: Path) -> None:
    async with KnowledgeBase(built, read_only=True) as kb:
        with pytest.raises(ConfigurationError) as info:
            await kb.answer(QUESTION)
    assert str(info.value).startswith("no LLM to write answers with")
    assert "EVIGRAPH_LLM_MODEL" in info.value.hint and "--llm" in info.value.hint


async def test_llm_errors_are_one_line_naming_the_fix_without_the_key(
    built: Path, replay_server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    def echo_key(request: Request) -> Reply:
        return error_reply(401, f"Incorrect API key provided: {request.header('authorization')}")

    replay_server.answer = echo_key
    async with (
        OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, timeout=0.5) as llm,
        KnowledgeBase(built, read_only=True, llm=llm) as kb,
    ):
        with pytest.raises(LLMConfigurationError) as refused:
            await kb.answer(QUESTION)
        replay_server.answer = None
        replay_server.queue(Reply(delay=3, body={}))
        with pytest.raises(LLMTimeoutError) as slow:
            async with kb.answer_stream(QUESTION) as stream:
                [d async for d in stream]
    assert "refused the API key (HTTP 401)" in str(refused.value) and "api_key=" in refused.value.hint
    assert "did not answer within 0.5 s" in str(slow.value) and "EVIGRAPH_LLM_TIMEOUT" in slow.value.hint
    for error in (refused.value, slow.value):
        assert "\n" not in str(error) and KEY not in str(error)
    assert replay_server.requests[0].header("authorization") == f"Bearer {KEY}"  # it was sent...
    assert KEY not in caplog.text  # ...and never logged


# -- the tool --------------------------------------------------------------------------------


def test_gap_statements_about_the_knowledge_base_need_no_citation() -> None:
    for sentence in ("Not in the knowledge base.", "Who founded Globex is not in the knowledge base."):
        check = check_citations(sentence, EvidenceLedger())
        assert check.uncited == [] and check.cited == []


async def test_the_tool_is_offered_only_with_an_llm(built: Path, kb: KnowledgeBase) -> None:
    async with KnowledgeBase(built, read_only=True) as bare:
        without = Toolkit(bare, read_only=True)
        assert "answer" not in {s.name for s in without.tool_specs()}
        with pytest.raises(ToolError, match="not offered"):
            await without.call("answer", {"question": QUESTION})
    spec = next(s for s in Toolkit(kb, read_only=True).tool_specs() if s.name == "answer")
    assert spec.annotations.read_only and not spec.annotations.destructive
    assert spec.input_schema["properties"]["top_k"]["maximum"] == 50
    assert spec.input_schema["properties"]["question"]["maxLength"] == 2000
    assert spec.input_schema["additionalProperties"] is False


async def test_the_tools_numbers_are_the_sessions(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    session = Toolkit(kb, read_only=True).new_session()
    found = await session.call("retrieve", {"question": "Where is Harbor Lab in Lisbon?", "top_k": 3})
    assert isinstance(found, RetrieveResult)
    seen = {p.id: p.n for p in found.passages}
    replay_server.answer = cite(LEADS, LEADS)
    result = await session.call("answer", {"question": QUESTION, "top_k": 3})
    assert isinstance(result, AnswerResult) and result.verified and result.status == "verified"
    n = result.citations.cited[0]
    for p in result.passages:  # evidence the session had seen keeps its number; new evidence gets new ones
        assert p.n == seen[p.id] if p.id in seen else p.n > max(seen.values())
    assert any(p.id not in seen for p in result.passages)
    text = result.to_llm_text()
    assert text.startswith(f"answer: {QUESTION}\n{LEADS} [{n}].\nCitation check: verified")
    assert f"[{n}] (ReefWatch" in text  # the evidence follows, as retrieve shows it
    check = await session.call("check_citations", {"answer": f"{LEADS} [{n}]."})
    assert isinstance(check, CitationResult) and check.grounded

    with pytest.raises(ToolError, match="invalid arguments for answer"):
        await session.call("answer", {"question": QUESTION, "top_k": 51})


def test_a_not_found_statement_on_a_later_line_counts() -> None:
    text = "Sorry.\nWho funds ReefWatch is not in the knowledge base."
    assert judge(text, check_citations(text, EvidenceLedger()))[0] == "not_found"
    assert judge("Sorry, no idea.", check_citations("Sorry, no idea.", EvidenceLedger()))[0] == "unverified"


async def test_a_retrieve_query_is_taken_as_it_is(kb: KnowledgeBase, replay_server: ReplayServer) -> None:
    from evigraph.retrieval.query import RetrieveInput

    replay_server.queue(chat_reply("Ana Costa leads ReefWatch [1]."))
    answer = await kb.answer(RetrieveInput(question=QUESTION, top_k=2, paths=["passages"]), max_answer_tokens=50)
    assert answer.paths == ["passages"] and len(answer.passages) <= 2 and answer.verified
    assert replay_server.chat_requests()[-1].body["max_tokens"] == 50


def test_answer_query_is_the_retrieve_query_plus_budgets() -> None:
    from evigraph.retrieval.query import RetrieveInput

    extra = set(AnswerInput.model_fields) - set(RetrieveInput.model_fields)
    assert extra == {"max_context_tokens", "max_answer_tokens"}
    query = AnswerInput(question="q", top_k=4, max_context_tokens=900)
    assert query.retrieval() == RetrieveInput(question="q", top_k=4)


async def test_a_raised_max_hits_is_taken_by_answer(
    built: Path, llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.answer = cite(LEADS, LEADS)
    async with KnowledgeBase(built, read_only=True, llm=llm, limits=Limits(max_hits=100)) as kb:
        assert (await kb.answer(QUESTION, top_k=80)).verified
        result = await Toolkit(kb, read_only=True).call("answer", {"question": QUESTION, "top_k": 80})
        assert isinstance(result, AnswerResult) and result.status == "verified"
        with pytest.raises(ConfigurationError, match="top_k: 1-100"):
            await kb.answer(QUESTION, top_k=101)
