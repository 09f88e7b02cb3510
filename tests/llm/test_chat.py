"""Chat against the replay server: what the client sends, what it returns, JSON and usage."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply, json_reply

from evigraph.errors import ConfigurationError, LLMError, LLMResponseError
from evigraph.providers.llms import LLM, ChatRequest, ChatResult, Message, OpenAICompatibleLLM, Usage


class People(BaseModel):
    names: list[str]


async def test_chat_sends_an_openai_request_and_returns_text_and_usage(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.queue(chat_reply("Lisbon.", prompt_tokens=21, completion_tokens=3))
    result = await llm.chat(
        [Message.system("Answer in one word."), {"role": "user", "content": "Capital of Portugal?"}], max_tokens=16
    )
    assert result.text == "Lisbon."
    assert result.data is None
    assert result.finish_reason == "stop" and result.model == "test-model"
    assert result.usage == Usage(input_tokens=21, output_tokens=3, calls=1)
    [request] = replay_server.requests
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert request.header("authorization") == f"Bearer {KEY}"
    assert request.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "Capital of Portugal?"},
        ],
        "temperature": 0.0,
        "max_tokens": 16,
    }


async def test_usage_accumulates_on_the_instance(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(
        chat_reply("a", prompt_tokens=10, completion_tokens=1), chat_reply("b", prompt_tokens=30, completion_tokens=4)
    )
    first = await llm.chat([Message.user("one")])
    second = await llm.chat([Message.user("two")])
    assert llm.usage == first.usage + second.usage == Usage(input_tokens=40, output_tokens=5, calls=2)
    assert llm.usage.total_tokens == 45


async def test_concurrent_calls_all_count(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(*(chat_reply(str(i), prompt_tokens=5, completion_tokens=2) for i in range(6)))
    await asyncio.gather(*(llm.chat([Message.user(str(i))]) for i in range(6)))
    assert llm.usage == Usage(input_tokens=30, output_tokens=12, calls=6)


async def test_missing_usage_is_estimated_not_zero(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("An answer of several words.", prompt_tokens=None))
    result = await llm.chat([Message.user("A question with a handful of words in it?")])
    assert result.usage.calls == 1 and result.usage.estimated_calls == 1
    assert result.usage.input_tokens > 10 and result.usage.output_tokens > 3


async def test_json_mode_sends_response_format_and_parses(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.queue(json_reply({"names": ["Ana Costa"]}))
    result = await llm.chat([Message.user("List the people as JSON.")], json_mode=True)
    assert result.data == {"names": ["Ana Costa"]}
    assert replay_server.requests[0].body["response_format"] == {"type": "json_object"}


async def test_json_schema_from_a_pydantic_model(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(json_reply({"names": ["Ana Costa", "Marta Oliveira"]}))
    result = await llm.chat([Message.user("People, as JSON")], json_schema=People)
    assert result.parse(People) == People(names=["Ana Costa", "Marta Oliveira"])
    sent = replay_server.requests[0].body["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "People"
    assert sent["json_schema"]["schema"] == People.model_json_schema()


async def test_json_found_in_prose_and_code_fences(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    """Servers without JSON mode: the model wraps its JSON; the value is found anyway."""
    replay_server.queue(
        chat_reply('Sure! Here it is:\n```json\n{"names": ["Ana"]}\n```\nAnything else?'),
        chat_reply('<think>the user wants {names}</think>There are [1] people: {"names": ["Rui"]} - done'),
    )
    fenced = await llm.chat([Message.user("json please")], json_mode=True)
    prose = await llm.chat([Message.user("json please")], json_mode=True)
    assert fenced.data == {"names": ["Ana"]}
    assert prose.data == {"names": ["Rui"]}


async def test_malformed_json_is_a_clear_one_line_error(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply('{"names": ["Ana", "Rui"\n  "oops"'))
    with pytest.raises(LLMResponseError) as info:
        await llm.chat([Message.user("json")], json_mode=True)
    text = str(info.value)
    assert "test-model returned malformed JSON" in text and "it begins" in text
    assert "\n" not in text
    assert info.value.hint
    assert llm.usage.calls == 1  # the tokens were spent all the same


async def test_json_cut_off_by_max_tokens_says_so(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply('{"names": ["Ana", "Ru', finish_reason="length"))
    with pytest.raises(LLMResponseError, match="cut off at max_tokens") as info:
        await llm.chat([Message.user("json")], json_mode=True, max_tokens=8)
    assert "max_tokens" in info.value.hint


async def test_json_of_the_wrong_shape(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(json_reply({"people": "Ana"}))
    with pytest.raises(LLMResponseError, match=r"does not fit People: names: Field required"):
        await llm.chat([Message.user("json")], json_schema=People)


async def test_server_without_json_schema_is_asked_again_and_remembered(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.queue(
        error_reply(400, "response_format type 'json_schema' is not supported by this model"),
        json_reply({"names": ["Ana"]}),
        json_reply({"names": ["Rui"]}),
    )
    first = await llm.chat([Message.user("json")], json_schema=People)
    second = await llm.chat([Message.user("json")], json_schema=People)
    assert (first.data, second.data) == ({"names": ["Ana"]}, {"names": ["Rui"]})
    formats = [r.body.get("response_format") for r in replay_server.chat_requests()]
    assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
    # the schema goes along in the form llama-cpp-python turns into a grammar
    assert formats[1]["schema"] == formats[2]["schema"] == formats[0]["json_schema"]["schema"]
    assert llm.json_support == "json_object_schema"
    assert llm.usage.calls == 2  # the refused request cost nothing


async def test_a_server_refusing_the_schema_too_gets_plain_json_mode(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    replay_server.queue(
        error_reply(400, "response_format type 'json_schema' is not supported by this model"),
        error_reply(400, "response_format: extra field 'schema' not permitted"),
        json_reply({"names": ["Ana"]}),
    )
    result = await llm.chat([Message.user("json")], json_schema=People)
    assert result.data == {"names": ["Ana"]}
    assert replay_server.chat_requests()[-1].body["response_format"] == {"type": "json_object"}
    assert llm.json_support == "json"


async def test_llama_cpp_python_refuses_json_schema_with_a_500_that_is_not_retried(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    """What llama-cpp-python 0.3.36's server answers a `json_schema` response format (recorded
    from the real server in tests/real_llm): HTTP 500 carrying its request validation's message.
    Retrying it would fail alike four times; it is a refusal of the format, so the next form is asked."""
    refusal = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
        "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", line 376"
    )
    replay_server.queue(error_reply(500, refusal, type="internal_server_error"), json_reply({"names": ["Ana"]}))
    result = await llm.chat([Message.user("json")], json_schema=People)
    assert result.data == {"names": ["Ana"]}
    sent = [r.body.get("response_format", {}).get("type") for r in replay_server.chat_requests()]
    assert sent == ["json_schema", "json_object"]  # no retries of the refused form
    assert llm.json_support == "json_object_schema"


async def test_a_plain_500_is_still_retried(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(error_reply(500, "the model crashed"), json_reply({"names": ["Ana"]}))
    result = await llm.chat([Message.user("json")], json_schema=People)
    assert result.data == {"names": ["Ana"]}
    assert [r.body["response_format"]["type"] for r in replay_server.chat_requests()] == ["json_schema"] * 2
    assert llm.json_support == "json_schema"


async def test_max_completion_tokens_servers(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(
        error_reply(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
        ),
        chat_reply("ok"),
    )
    await llm.chat([Message.user("hi")], max_tokens=5)
    last = replay_server.chat_requests()[-1].body
    assert "max_tokens" not in last and last["max_completion_tokens"] == 5


async def test_invalid_requests_are_refused_before_sending(
    llm: OpenAICompatibleLLM, replay_server: ReplayServer
) -> None:
    with pytest.raises(ConfigurationError, match="messages"):
        await llm.chat([])
    with pytest.raises(ConfigurationError, match="role"):
        await llm.chat([{"role": "robot", "content": "hi"}])
    with pytest.raises(ConfigurationError, match="max_tokens"):
        await llm.chat([Message.user("hi")], max_tokens=0)
    assert replay_server.requests == []


async def test_content_as_a_list_of_parts(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    body = chat_reply("x").body
    body["choices"][0]["message"]["content"] = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]
    replay_server.queue(Reply(body=body))
    assert (await llm.chat([Message.user("hi")])).text == "Hello there"


class EchoLLM(LLM):
    """The contract's own example: a provider implements `_complete` only."""

    model = "echo"

    async def _complete(self, request: ChatRequest) -> ChatResult:
        return ChatResult(text=request.messages[-1].content, usage=Usage(input_tokens=1, output_tokens=1, calls=1))


async def test_a_provider_implements_complete_only() -> None:
    echo = EchoLLM()
    result = await echo.chat([Message.user('{"ok": true}')], json_mode=True)
    assert result.data == {"ok": True}
    async with echo.stream([Message.user("streamed whole")]) as stream:
        assert [d async for d in stream] == ["streamed whole"]
    assert stream.result.text == "streamed whole"
    assert echo.usage == Usage(input_tokens=2, output_tokens=2, calls=2)
    assert echo.spec is None


async def test_calls_refused_together_step_down_once(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    """Found with the real model: the batches of one ingest were refused json_schema together, and
    each refusal took a step, leaving plain JSON mode where the schema form was taken."""

    def answer(request: Request) -> Reply:
        if request.body["response_format"]["type"] == "json_schema":
            return error_reply(400, "response_format json_schema is not supported", delay=0.3)  # all in flight
        return json_reply({"names": ["Ana"]})

    replay_server.answer = answer
    results = await asyncio.gather(*(llm.chat([Message.user("json")], json_schema=People) for _ in range(3)))
    assert [r.data for r in results] == [{"names": ["Ana"]}] * 3
    assert llm.json_support == "json_object_schema"
    assert all("schema" in r.body["response_format"] for r in replay_server.chat_requests()[3:])


def test_an_unknown_json_support_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigurationError, match="json_object") as info:
        OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1", api_key="", json_support="json_object")  # type: ignore[arg-type]
    assert "json_schema, json_object_schema, json, text" in info.value.hint


async def test_a_refusal_of_what_cannot_be_dropped_is_not_sent_again_forever(replay_server: ReplayServer) -> None:
    """A response format the caller forces through extra_body stays in every request: once the
    client has nothing left to drop, the refusal is the answer."""
    replay_server.answer = lambda request: error_reply(400, "response_format json_schema is not supported")
    forced = {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}}
    llm = OpenAICompatibleLLM("m", base_url=replay_server.url, api_key="", backoff=0.01, extra_body=forced)
    async with llm:
        with pytest.raises(LLMError, match="HTTP 400"):
            await llm.chat([Message.user("json")], json_mode=True)
    assert len(replay_server.chat_requests()) <= 4  # a step down or two, then the error
