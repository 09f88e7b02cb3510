"""The API key never shows: not in logs (ours or httpx's, at DEBUG), errors, reprs or tool text.

Servers are scripted to echo the key back (in error bodies and headers), as real ones do.
"""

from __future__ import annotations

import logging
import traceback
from urllib.parse import quote

import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply, rate_limited, stream_reply

from evigraph.errors import LLMConfigurationError, LLMError
from evigraph.masking import Secret, mask_credentials
from evigraph.providers.llms import Message, OpenAICompatibleLLM

Q = [Message.user("hi")]


def _visible(exc: BaseException) -> str:
    """Everything a person could see of an exception: str, repr, hint, a full traceback."""
    return " ".join([str(exc), repr(exc), getattr(exc, "hint", ""), "".join(traceback.format_exception(exc))])


def _echo_key(request: Request) -> Reply:
    auth = request.header("authorization") or request.header("api-key") or ""
    return error_reply(
        401, f"Incorrect API key provided: {auth}.", headers={"X-Echo-Authorization": auth, "X-Seen": "yes"}
    )


async def test_key_never_in_logs_errors_or_reprs(replay_server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # httpx logs URLs at INFO, httpcore response headers at DEBUG
    replay_server.queue(
        rate_limited(0), chat_reply("fine", prompt_tokens=3, completion_tokens=1), stream_reply(["a", "b"])
    )
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, backoff=0.01) as llm:
        await llm.chat(Q)  # a retry, then an answer
        async with llm.stream(Q) as stream:
            [d async for d in stream]
        replay_server.answer = _echo_key
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(Q)
        assert replay_server.requests[-1].header("authorization") == f"Bearer {KEY}"  # it was sent
        assert "x-echo-authorization" in caplog.text.lower()  # httpcore did log the echoed header...
        assert KEY not in caplog.text  # ...with the key masked
        assert all(KEY not in r.getMessage() for r in caplog.records)
        assert "retrying" in caplog.text  # our own retry line is there, without the key
        visible = _visible(info.value)
        assert KEY not in visible and "Incorrect API key provided: Bearer ***" in visible
        assert KEY not in repr(llm) and "api_key='***'" in repr(llm)
        assert KEY not in repr(vars(llm)) and KEY not in str(vars(llm))


async def test_key_in_the_url_query_is_masked(replay_server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"{replay_server.url}?api-key={KEY}"
    replay_server.queue(chat_reply("ok"), *[error_reply(500, "down")] * 2)
    async with OpenAICompatibleLLM("test-model", base_url=url, max_retries=1, backoff=0.01) as llm:
        assert (await llm.chat(Q)).text == "ok"
        with pytest.raises(LLMError) as info:
            await llm.chat(Q)
        assert replay_server.requests[0].query["api-key"] == KEY  # the server got it where it was put
        assert replay_server.requests[0].header("authorization") is None
        assert KEY not in caplog.text and "api-key=***" in caplog.text  # httpx's own request line
        assert KEY not in _visible(info.value) and "api-key=***" in str(info.value)
        assert KEY not in repr(llm) and KEY not in repr(vars(llm))
        assert llm.endpoint.display == f"{replay_server.url}?api-key=***"


async def test_azure_style_deployment_url(replay_server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    root = replay_server.url.removesuffix("/v1")
    url = f"{root}/openai/deployments/gpt4o-prod?api-version=2024-06-01"
    replay_server.queue(chat_reply("ok"))
    async with OpenAICompatibleLLM(base_url=url, api_key=KEY) as llm:  # the model is the deployment
        assert llm.model == "gpt4o-prod" and llm.endpoint.azure
        await llm.chat(Q)
        replay_server.answer = _echo_key
        with pytest.raises(LLMConfigurationError) as info:
            await llm.chat(Q)
    first = replay_server.requests[0]
    assert first.path == "/openai/deployments/gpt4o-prod/chat/completions"
    assert first.query == {"api-version": "2024-06-01"}
    assert first.header("api-key") == KEY and first.header("authorization") is None
    assert llm.endpoint.models_url == f"{root}/openai/models?api-version=2024-06-01"
    assert KEY not in _visible(info.value) and KEY not in caplog.text


async def test_streamed_error_echoing_the_key(replay_server: ReplayServer) -> None:
    events = [{"error": {"message": f"upstream rejected key {KEY}"}}]
    replay_server.queue(Reply(events=events))
    async with OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY) as llm:
        with pytest.raises(LLMError) as info:
            async with llm.stream(Q) as stream:
                [d async for d in stream]
    assert KEY not in _visible(info.value) and "***" in str(info.value)


def test_mask_credentials_forms() -> None:
    odd = "ab/cd+ef=gh-0123"
    assert mask_credentials(f"url ?key={quote(odd, safe='')} raw {odd}", (odd,)) == "url ?key=*** raw ***"
    assert mask_credentials("Authorization: Bearer abcdef123456") == "Authorization: Bearer ***"
    assert mask_credentials("https://u:pa55word@host/v1") == "https://u:***@host/v1"
    assert mask_credentials("GET /v1?api-version=1&api-key=zzzz9999&x=1") == "GET /v1?api-version=1&api-key=***&x=1"
    assert mask_credentials("unknown key sk-proj-abcdefgh12345 leaked") == "unknown key *** leaked"
    assert mask_credentials("the token limit is 4096 tokens") == "the token limit is 4096 tokens"  # narrow


def test_secret_wrapper_hides_its_value() -> None:
    secret = Secret(KEY)
    assert KEY not in repr(secret) and KEY not in str(secret) and KEY not in f"{secret}"
    assert secret.reveal() == KEY and bool(secret) and not Secret("")


def test_mcp_masks_the_llm_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tool results and the MCP server's stderr mask EVIGRAPH_LLM_API_KEY like the other keys."""
    from evigraph.masking import env_secrets, mask_secrets

    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", "plainkeywithoutshape42")
    secrets = env_secrets()
    assert "plainkeywithoutshape42" in secrets
    assert mask_secrets("failed with plainkeywithoutshape42", secrets) == "failed with ***"
