"""Streaming over SSE: deltas as they come, usage at the end, and failures before or during."""

from __future__ import annotations

import time

import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, chat_reply, error_reply, rate_limited, stream_reply

from evigraph.errors import LLMConfigurationError, LLMError, LLMResponseError, LLMTimeoutError
from evigraph.providers.llms import Message, OpenAICompatibleLLM, Usage

Q = [Message.user("Who leads ReefWatch?")]


async def test_stream_yields_deltas_then_result_with_usage(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.queue(stream_reply(["Ana ", "Costa ", "leads it [1]."], usage=(40, 6)))
    async with llm.stream(Q, max_tokens=50) as stream:
        deltas = [d async for d in stream]
    assert deltas == ["Ana ", "Costa ", "leads it [1]."]
    assert stream.result.text == "Ana Costa leads it [1]."
    assert stream.result.finish_reason == "stop"
    assert stream.result.usage == Usage(input_tokens=40, output_tokens=6, calls=1)
    assert llm.usage == stream.result.usage
    body = replay_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 50


async def test_deltas_arrive_before_the_answer_ends(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(stream_reply(["first", "second", "third"], event_delay=0.3))
    started = time.monotonic()
    async with llm.stream(Q) as stream:
        first = await anext(stream)
        at_first = time.monotonic() - started
        rest = [d async for d in stream]
    assert first == "first" and rest == ["second", "third"]
    assert at_first < 0.9 < time.monotonic() - started  # not buffered until the end


async def test_stream_without_usage_is_estimated(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(stream_reply(["Some words ", "of an answer."], usage=None))
    async with llm.stream(Q) as stream:
        text = "".join([d async for d in stream])
    assert text == "Some words of an answer."
    usage = stream.result.usage
    assert usage.calls == usage.estimated_calls == 1 and usage.input_tokens > 0 and usage.output_tokens > 0


async def test_server_refusing_stream_options_is_asked_again(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.queue(
        error_reply(400, "Unrecognized request argument supplied: stream_options"),
        stream_reply(["ok"], usage=None),
        stream_reply(["again"], usage=None),
    )
    for _ in range(2):
        async with llm.stream(Q) as stream:
            [d async for d in stream]
    sent = [r.body for r in replay_server.chat_requests()]
    assert "stream_options" in sent[0] and "stream_options" not in sent[1] and "stream_options" not in sent[2]
    assert llm.stream_usage is False


async def test_stream_retries_before_the_first_delta(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(rate_limited(0.2), stream_reply(["ok"]))
    async with llm.stream(Q) as stream:
        assert [d async for d in stream] == ["ok"]
    assert replay_server.calls() == 2


async def test_stream_refused_raises_on_first_iteration(replay_server: ReplayServer) -> None:
    replay_server.queue(error_reply(401, "invalid key"))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY) as llm:
        stream = llm.stream(Q)
        with pytest.raises(LLMConfigurationError, match="refused the API key"):
            await anext(stream)
        with pytest.raises(RuntimeError, match="has not ended"):
            _ = stream.result
        assert llm.usage == Usage(calls=1, failed_calls=1)  # a refused call, as `chat` counts one: no tokens read


async def test_stream_that_breaks_off_is_an_error(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    reply = stream_reply(["partial ", "answ"], usage=None, done=False)
    replay_server.queue(Reply(events=list(reply.events or [])[:3], done=False))  # no finish, no [DONE]
    received: list[str] = []
    with pytest.raises(LLMResponseError, match="ended before the model finished"):
        async with llm.stream(Q) as stream:
            async for delta in stream:
                received.append(delta)
    assert received == ["partial ", "answ"]
    assert llm.usage.calls == 1 and llm.usage.estimated_calls == 1  # what was received was paid for
    assert llm.usage.failed_calls == 1 and llm.usage.output_tokens > 0


async def test_error_event_mid_stream(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    events = [*list(stream_reply(["a"]).events or [])[:2], {"error": {"message": "model crashed"}}]
    replay_server.queue(Reply(events=events))
    with pytest.raises(LLMError, match="failed mid-answer: model crashed"):
        async with llm.stream(Q) as stream:
            [d async for d in stream]


async def test_stream_stalling_past_the_timeout(replay_server: ReplayServer) -> None:
    replay_server.queue(stream_reply(["a", "b"], event_delay=2))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, timeout=0.3) as llm:
        with pytest.raises(LLMTimeoutError, match=r"did not answer within 0\.3 s"):
            async with llm.stream(Q) as stream:
                [d async for d in stream]


async def test_leaving_a_stream_early_releases_its_slot(replay_server: ReplayServer) -> None:
    replay_server.queue(stream_reply(["a", "b", "c"], event_delay=0.2), chat_reply("next"))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, concurrency=1) as llm:
        async with llm.stream(Q) as stream:
            async for _ in stream:
                break
        assert llm.usage.calls == 1  # counted with what was received
        assert (await llm.chat(Q)).text == "next"  # the single slot was given back


async def test_server_ignoring_stream_answers_whole(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("all at once", prompt_tokens=9, completion_tokens=3))
    async with llm.stream(Q) as stream:
        assert [d async for d in stream] == ["all at once"]
    assert stream.result.usage == Usage(input_tokens=9, output_tokens=3, calls=1)
