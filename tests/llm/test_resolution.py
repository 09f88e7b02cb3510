"""`finalize --resolver llm`: candidate pairs confirmed by a model in batches, through the replay server.

The server answers by what the prompt holds, as a model would: it reads the numbered entities
and pairs and says "same" only for the pairs a test lists.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection
from pathlib import Path

import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, json_reply

from evigraph.kb import KnowledgeBase
from evigraph.kb.spend import recorded_spend
from evigraph.models import entity_id
from evigraph.providers.llms import OpenAICompatibleLLM

DOCS = {
    "a": "Marta Oliveira founded Harbor Lab in Lisbon in 2014. She hired Ana Costa.",
    "b": "Marta Olivera visited the Harbour Lab in Lisbon. Ana Costa met Rui Pinto there.",
}
MARTA, MARTA_TYPO = entity_id("Marta Oliveira", "Unknown"), entity_id("Marta Olivera", "Unknown")
LAB, LAB_UK = entity_id("Harbor Lab", "Unknown"), entity_id("Harbour Lab", "Unknown")
_ENTITY = re.compile(r"^E(\d+) (.+?) \[", re.MULTILINE)
_PAIR = re.compile(r"(\d+) E(\d+)=E(\d+)")


def judge(same: Collection[frozenset[str]]) -> tuple[list[Request], object]:
    """An answer function saying "same" for the pairs of names in `same`, "different" for the others."""
    seen: list[Request] = []

    def answer(request: Request) -> Reply | None:
        seen.append(request)
        prompt = request.messages[-1]["content"]
        names = {int(n): name for n, name in _ENTITY.findall(prompt)}
        pairs = [(int(n), names[int(a)], names[int(b)]) for n, a, b in _PAIR.findall(prompt.split("Pairs:")[1])]
        verdict = {
            "same": [n for n, a, b in pairs if frozenset((a, b)) in same],
            "different": [n for n, a, b in pairs if frozenset((a, b)) not in same],
        }
        return json_reply(verdict, prompt_tokens=90, completion_tokens=9)

    return seen, answer


async def ingested(tmp_path: Path, llm: OpenAICompatibleLLM) -> KnowledgeBase:
    kb = KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm)
    for key, text in DOCS.items():
        assert (await kb.ingest(text=text, key=key, progress=False)).ok
    return kb


async def documents_naming(kb: KnowledgeBase, entity: str) -> set[str]:
    store = kb.store
    assert store is not None
    chunks = dict.fromkeys(c for _, c in await store.passages_for_entities([entity], per_entity=50))
    return {c.document for c in await store.passages_by_ids(list(chunks))}


async def test_the_llm_merges_what_it_confirms_and_not_what_it_rejects(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    requests, replay_server.answer = judge({frozenset(("Marta Oliveira", "Marta Olivera"))})  # type: ignore[assignment]
    async with await ingested(tmp_path, llm) as kb:
        report = await kb.finalize(resolver="llm")

        r = report.resolution
        assert r is not None and r.resolver == "llm"
        assert (r.candidates, r.judged, r.confirmed, r.rejected, r.merged) == (2, 2, 1, 1, 1)
        assert len(requests) == 1  # both pairs in one call
        assert r.llm is not None and (r.llm.calls, r.llm.input_tokens, r.llm.output_tokens) == (1, 90, 9)
        assert [(m.name, m.names) for m in r.merges] == [("Marta Oliveira", ["Marta Olivera"])]
        # The survivor holds both spellings' mentions; the pair the model rejected stays two entities.
        assert await documents_naming(kb, MARTA) == {"a", "b"}
        store = kb.store
        assert store is not None
        assert await store.entities_by_ids([MARTA_TYPO]) == []
        assert await documents_naming(kb, LAB) == {"a"} and await documents_naming(kb, LAB_UK) == {"b"}
        assert await store.entity_redirects() == {MARTA_TYPO: MARTA}
        spent = await recorded_spend(store)  # the knowledge base's running LLM total counts it
        assert spent is not None and spent.calls == 1 and spent.input_tokens == 90

    request = requests[0]
    body = request.body
    assert body["response_format"]["type"] == "json_schema"  # the answer's shape is asked for
    prompt = request.messages[-1]["content"]
    assert "Marta Oliveira [Unknown]" in prompt and "Harbour Lab [Unknown]" in prompt
    assert '"Marta Olivera visited the Harbour Lab in Lisbon.' in prompt  # a snippet of a passage naming it
    assert len(prompt) < 1200  # short context: names, labels, aliases, a snippet each
    assert request.header("authorization") == f"Bearer {KEY}"
    assert KEY not in caplog.text and KEY not in report.model_dump_json()


async def test_a_failed_call_leaves_its_pairs_undecided_and_merges_nothing(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    replay_server.queue(chat_reply("the same, I think", prompt_tokens=80, completion_tokens=5))
    async with await ingested(tmp_path, llm) as kb:
        report = await kb.finalize(resolver="llm")
        r = report.resolution
        assert r is not None
        assert (r.candidates, r.judged, r.unjudged, r.merged) == (2, 0, 2, 0)
        # A failed call is still a call, with the tokens its server reported, as extraction counts them.
        assert r.llm is not None and (r.llm.calls, r.llm.failed_calls) == (1, 1)
        assert (r.llm.input_tokens, r.llm.output_tokens) == (80, 5)
        assert len(r.errors) == 1 and "malformed JSON" in r.errors[0]
        assert await documents_naming(kb, MARTA_TYPO) == {"b"}
    assert KEY not in caplog.text and KEY not in json.dumps(report.model_dump())


async def test_pairs_are_sent_in_batches(tmp_path: Path, replay_server: ReplayServer) -> None:
    from evigraph.ingest.graph_resolution.llm import LLMGraphResolution

    requests, replay_server.answer = judge(())  # type: ignore[assignment]
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, backoff=0.01) as client:
        kb = KnowledgeBase(tmp_path / "kb.db", extractor="rules")
        for key, text in DOCS.items():
            await kb.ingest(text=text, key=key, progress=False)
        async with kb:
            report = await kb.finalize(resolver=LLMGraphResolution(client, pairs_per_call=1))
    assert len(requests) == 2 and report.resolution is not None
    assert (report.resolution.rejected, report.resolution.merged) == (2, 0)
    assert report.resolution.llm is not None and report.resolution.llm.calls == 2


async def test_a_call_the_server_failed_is_costed_as_an_ingest_costs_it(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    """Finalize has no token ceiling but meters its calls as `llm_verified` does: a call the server
    read and failed costs its estimated input, schema included, whoever asked."""
    from tests.llm.replay_server import error_reply

    from evigraph.ingest.extraction.budget import estimate_input
    from evigraph.ingest.graph_resolution.llm import ANSWER_SCHEMA
    from evigraph.providers.llms.base import Message

    replay_server.queue(*[error_reply(500, "upstream exploded", type="server_error")] * 4)  # every retry
    async with await ingested(tmp_path, llm) as kb:
        r = (await kb.finalize(resolver="llm")).resolution
        assert r is not None and r.llm is not None and (r.llm.calls, r.llm.failed_calls, r.unjudged) == (1, 1, 2)
    sent = replay_server.chat_requests()[0].messages
    messages = (Message.system(sent[0]["content"]), Message.user(sent[-1]["content"]))
    assert r.llm.input_tokens == estimate_input(messages, ANSWER_SCHEMA) > 0


async def test_the_finalize_tool_runs_the_llm_resolver_within_the_operators_pairs(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    from evigraph import Toolkit

    requests, replay_server.answer = judge({frozenset(("Marta Oliveira", "Marta Olivera"))})  # type: ignore[assignment]
    async with await ingested(tmp_path, llm) as kb:
        tk = Toolkit(kb, plan_limits={"finalize_resolvers": ["exact", "fuzzy", "llm"], "max_llm_pairs": 1})
        result = (await tk.call("finalize", {"resolver": "llm"})).model_dump()
        assert result["resolver"] == "llm" and result["candidates"] == 2
        assert result["unjudged"] == 1  # the second pair is over the operator's one
        assert len(requests) == 1 and result["llm_tokens"] == 99
        sent = _PAIR.findall(requests[0].messages[-1]["content"].split("Pairs:")[1])
        assert len(sent) == 1  # one pair asked; the model said "different" for it, so nothing merged
        assert result["merged"] == 0
