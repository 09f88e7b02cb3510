"""Retries, timeouts and refusals: each ends in success or one line that names the fix."""

from __future__ import annotations

import socket
import time

import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, chat_reply, error_reply, rate_limited

from evigraph.errors import ConfigurationError, LLMConfigurationError, LLMError, LLMResponseError, LLMTimeoutError
from evigraph.providers.http import RetryPolicy, retry_after
from evigraph.providers.llms import Message, OpenAICompatibleLLM

HI = [Message.user("hi")]


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text.strip() == text
    return text


async def test_429_waits_for_retry_after_then_succeeds(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(rate_limited(1), chat_reply("ok"))
    started = time.monotonic()
    result = await llm.chat(HI)
    waited = time.monotonic() - started
    assert result.text == "ok"
    assert replay_server.calls() == 2
    assert waited >= 1.0  # the client backoff is 0.01 s: only Retry-After explains the wait
    assert llm.usage.calls == 1  # one call answered, whatever it took


async def test_429_retry_after_ms(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(
        error_reply(429, "slow down", headers={"retry-after-ms": "300", "Retry-After": "9"}), chat_reply("ok")
    )
    started = time.monotonic()
    assert (await llm.chat(HI)).text == "ok"
    assert 0.3 <= time.monotonic() - started < 3  # the precise header wins


async def test_429_asking_for_too_long_a_wait_gives_up_at_once(replay_server: ReplayServer) -> None:
    replay_server.queue(rate_limited(600))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, max_wait=30) as llm:
        with pytest.raises(LLMError) as info:
            await llm.chat(HI)
    assert replay_server.calls() == 1
    text = _one_line(info.value)
    assert "rate limiting (HTTP 429)" in text and "asks to wait 600 s" in text
    assert "concurrency" in info.value.hint


async def test_429_insufficient_quota_is_not_retried(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(error_reply(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(LLMConfigurationError, match="quota exceeded") as info:
        await llm.chat(HI)
    assert replay_server.calls() == 1 and "billing" in info.value.hint


async def test_5xx_is_retried_then_succeeds(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(error_reply(500, "boom", type="server_error"), error_reply(503, "busy"), chat_reply("ok"))
    assert (await llm.chat(HI)).text == "ok"
    assert replay_server.calls() == 3


async def test_5xx_gives_up_after_the_retries_with_a_clear_error(replay_server: ReplayServer) -> None:
    replay_server.queue(*[error_reply(500, "the model crashed", type="server_error")] * 5)
    async with OpenAICompatibleLLM(
        "test-model", base_url=replay_server.url, api_key=KEY, max_retries=2, backoff=0.01
    ) as llm:
        with pytest.raises(LLMError) as info:
            await llm.chat(HI)
    assert replay_server.calls() == 3  # the first attempt and two retries
    assert not isinstance(info.value, LLMConfigurationError)  # transient: the caller fails one document
    text = _one_line(info.value)
    assert "failed with HTTP 500 after 3 attempts: the model crashed" in text
    assert info.value.status == 500 and "retry later" in info.value.hint
    assert llm.usage.calls == llm.usage.failed_calls == 1  # a failed call is still a call


async def test_timeout_is_a_clear_error_and_not_retried(replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("too late", delay=3))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, timeout=0.3) as llm:
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError) as info:
            await llm.chat(HI)
        assert time.monotonic() - started < 2
    assert replay_server.calls() == 1
    text = _one_line(info.value)
    assert "did not answer within 0.3 s" in text and "EVIGRAPH_LLM_TIMEOUT" in info.value.hint


async def test_wrong_key_names_the_variable(replay_server: ReplayServer) -> None:
    replay_server.queue(error_reply(401, "Incorrect API key provided", code="invalid_api_key"))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, backoff=0.01) as llm:  # no key at all
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(HI)
    assert replay_server.calls() == 1  # an auth failure is not retried
    assert "refused the API key (HTTP 401)" in _one_line(info.value)
    assert "EVIGRAPH_LLM_API_KEY" in info.value.hint


async def test_wrong_key_from_the_environment(replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", KEY)
    replay_server.queue(error_reply(401, "Incorrect API key provided"))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url) as llm:
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(HI)
    assert info.value.hint == "check EVIGRAPH_LLM_API_KEY"
    assert replay_server.requests[0].header("authorization") == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "message",
    [
        'model "llama9" not found, try pulling it first',  # Ollama
        "The model `llama9` does not exist.",  # vLLM, OpenAI
    ],
)
async def test_unknown_model_names_the_model(replay_server: ReplayServer, message: str) -> None:
    replay_server.queue(error_reply(404, message))
    async with OpenAICompatibleLLM("llama9", base_url=replay_server.url, backoff=0.01) as llm:
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(HI)
    assert "model 'llama9' not found" in _one_line(info.value)
    assert "EVIGRAPH_LLM_MODEL" in info.value.hint and "ollama pull llama9" in info.value.hint
    assert f"{replay_server.url}/models" in info.value.hint


async def test_wrong_path_names_the_base_url(replay_server: ReplayServer) -> None:
    replay_server.queue(Reply(status=404, body="404 page not found"))
    async with OpenAICompatibleLLM("m", base_url=replay_server.url.removesuffix("/v1"), backoff=0.01) as llm:
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(HI)
    assert "no chat completions endpoint (HTTP 404)" in _one_line(info.value)
    assert "EVIGRAPH_LLM_BASE_URL" in info.value.hint and "/v1" in info.value.hint


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_unreachable_server_names_the_base_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    async with OpenAICompatibleLLM("m", base_url=url, max_retries=1, backoff=0.01) as llm:
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(HI)
    text = _one_line(info.value)
    assert f"cannot reach {url} after 2 attempts" in text
    assert "EVIGRAPH_LLM_BASE_URL" in info.value.hint and "running" in info.value.hint


async def test_context_too_long(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(
        error_reply(400, "This model's maximum context length is 8192 tokens.", code="context_length_exceeded")
    )
    with pytest.raises(LLMError) as info:
        await llm.chat(HI)
    assert not isinstance(info.value, LLMConfigurationError)  # another document may fit
    assert "maximum context length" in str(info.value) and "smaller chunks" in info.value.hint


async def test_not_an_openai_server(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(Reply(body="<html>login</html>"))
    with pytest.raises(LLMResponseError, match="did not answer with JSON") as info:
        await llm.chat(HI)
    assert "EVIGRAPH_LLM_BASE_URL" in info.value.hint


async def test_no_choices(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(Reply(body={"id": "x", "choices": []}))
    with pytest.raises(LLMResponseError, match="answered without choices"):
        await llm.chat(HI)


async def test_error_with_status_200(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(Reply(body={"error": {"message": "out of memory"}}))
    with pytest.raises(LLMError, match="failed: out of memory"):
        await llm.chat(HI)


async def test_dropped_connection_is_retried(llm: OpenAICompatibleLLM, replay_server: ReplayServer) -> None:
    replay_server.queue(Reply(disconnect=True), chat_reply("ok"))
    assert (await llm.chat(HI)).text == "ok"
    assert replay_server.calls() == 2


def test_retry_policy_backs_off_with_jitter_and_honours_retry_after() -> None:
    policy = RetryPolicy(retries=3, backoff=1.0, max_wait=10)
    for attempt, (low, high) in enumerate([(0.5, 1.0), (1.0, 2.0), (2.0, 4.0)]):
        delays = {policy.delay(attempt) for _ in range(20)}
        assert all(d is not None and low <= d <= high for d in delays)
        assert len(delays) > 1  # jittered
    assert policy.delay(3) is None  # out of retries
    delay = policy.delay(0, retry_after=5)
    assert delay is not None and 5 <= delay <= 6
    assert policy.delay(0, retry_after=11) is None  # longer than max_wait: give up, do not retry early


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "0.5"}) == 0.5
    assert retry_after({"retry-after-ms": "1500"}) == 1.5
    assert retry_after({}) is None
    assert retry_after({"retry-after": "soon"}) is None
    in_a_minute = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
    wait = retry_after({"retry-after": in_a_minute})
    assert wait is not None and 55 <= wait <= 61


def test_configuration_errors_are_configuration_errors() -> None:
    """The CLI and callers that catch ConfigurationError catch these too."""
    assert issubclass(LLMConfigurationError, ConfigurationError) and issubclass(LLMConfigurationError, LLMError)


async def test_connection_dropped_every_time_is_not_a_configuration_error(replay_server: ReplayServer) -> None:
    """The server is there but breaks off: one document fails, the batch need not stop."""
    replay_server.queue(*[Reply(disconnect=True)] * 3)
    async with OpenAICompatibleLLM("m", base_url=replay_server.url, max_retries=2, backoff=0.01) as llm:
        with pytest.raises(LLMError) as info:
            await llm.chat(HI)
    assert not isinstance(info.value, LLMConfigurationError)
    assert "failed after 3 attempts (RemoteProtocolError" in _one_line(info.value)
