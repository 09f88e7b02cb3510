"""Fixtures for the LLM tests: a replay server on loopback, a key, and a client pointed at it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest
from tests.llm.replay_server import ReplayServer

from evigraph.providers.llms import OpenAICompatibleLLM

KEY = "sk-test-SECRETKEY-0123456789abcdef"
"""A key-shaped secret every test asserts never shows up where a person could read it."""


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own EVIGRAPH_LLM_* settings must not leak into the tests."""
    for name in (
        "EVIGRAPH_LLM_BASE_URL",
        "EVIGRAPH_LLM_MODEL",
        "EVIGRAPH_LLM_API_KEY",
        "EVIGRAPH_LLM_TIMEOUT",
        "EVIGRAPH_LLM_CONCURRENCY",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def replay_server() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.fixture
async def llm(replay_server: ReplayServer) -> AsyncIterator[OpenAICompatibleLLM]:
    """A client with the test key, quick retries and a short timeout."""
    client = OpenAICompatibleLLM("test-model", base_url=replay_server.url, api_key=KEY, backoff=0.01, timeout=5)
    async with client:
        yield client


def key_client(server: ReplayServer, timeout: float = 5) -> OpenAICompatibleLLM:
    """A client of `server` with the test key and quick retries, for tests that open several."""
    return OpenAICompatibleLLM("test-model", base_url=server.url, api_key=KEY, backoff=0.01, timeout=timeout)


@pytest.fixture
def no_key_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every log line of the test, down to httpcore's DEBUG, checked for the key afterwards."""
    caplog.set_level(logging.DEBUG)
    yield
    assert KEY not in caplog.text
