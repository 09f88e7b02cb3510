"""The replay server itself: later tests (extraction, answers, the cost bench) lean on its script forms."""

from __future__ import annotations

import pytest
from tests.llm.replay_server import ReplayServer, Reply, Request, json_reply

from evigraph.errors import LLMError
from evigraph.providers.llms import Message, OpenAICompatibleLLM


async def test_answers_by_content_when_nothing_is_queued(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    def by_prompt(request: Request) -> Reply:
        names = [n for n in ("Ana Costa", "Harbor Lab") if n in request.prompt]
        return json_reply({"entities": names}, prompt_tokens=len(request.prompt) // 4, completion_tokens=5)

    replay_server.answer = by_prompt
    first = await llm.chat([Message.user("Ana Costa leads ReefWatch.")], json_mode=True)
    second = await llm.chat([Message.system("Extract."), Message.user("Harbor Lab is in Lisbon.")], json_mode=True)
    assert first.data == {"entities": ["Ana Costa"]} and second.data == {"entities": ["Harbor Lab"]}
    assert replay_server.calls() == 2 and replay_server.pending == 0
    assert replay_server.chat_requests()[1].messages[0] == {"role": "system", "content": "Extract."}


async def test_queue_comes_before_the_answer_function(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.answer = lambda request: json_reply({"from": "function"})
    replay_server.queue(json_reply({"from": "queue"}))
    assert (await llm.chat([Message.user("json")], json_mode=True)).data == {"from": "queue"}
    assert (await llm.chat([Message.user("json")], json_mode=True)).data == {"from": "function"}


async def test_unscripted_request_fails_loudly(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    with pytest.raises(LLMError, match="no scripted reply for POST /v1/chat/completions"):
        await llm.chat([Message.user("hi")])
    assert replay_server.calls() == 1  # a 400: not retried
