"""`evigraph doctor`'s LLM line: configured or not, and when configured, whether the server answers."""

from __future__ import annotations

import socket
import time

import pytest
from tests.conftest import run_cli
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, error_reply

from evigraph.doctor import Check, doctor


def _llm_check() -> Check:
    [check] = [c for c in doctor().checks if c.area == "llm"]
    return check


def test_not_configured_says_how() -> None:
    check = _llm_check()
    assert not check.ok and check.name == "llm"
    assert "no LLM configured" in check.detail and "EVIGRAPH_LLM_MODEL" in check.hint


def test_reachable_and_listed(replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "test-model")
    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", KEY)
    check = _llm_check()
    assert check.ok and check.name == "openai:test-model"
    assert check.detail == f"test-model at {replay_server.url}: reachable"
    [probe] = replay_server.requests
    assert probe.method == "GET" and probe.path == "/v1/models"
    assert probe.header("authorization") == f"Bearer {KEY}"
    assert replay_server.calls() == 0  # no chat call, no tokens spent


def test_ollama_latest_tag_counts_as_listed(replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    replay_server.models = ["llama3.1:latest"]
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "llama3.1")
    assert _llm_check().ok


def test_model_not_listed(replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    replay_server.models = ["qwen2.5:7b", "llama3.1:latest"]
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "mistral")
    check = _llm_check()
    assert not check.ok and "does not list this model (it lists qwen2.5:7b, llama3.1:latest)" in check.detail
    assert "EVIGRAPH_LLM_MODEL" in check.hint and "ollama pull mistral" in check.hint


def test_wrong_key(replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    replay_server.answer = lambda request: error_reply(401, f"bad key {request.header('authorization')}")
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "test-model")
    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", KEY)
    check = _llm_check()
    assert not check.ok and "the API key was refused (HTTP 401" in check.detail
    assert check.hint == "check EVIGRAPH_LLM_API_KEY"
    assert KEY not in check.model_dump_json()


def test_unreachable_is_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "test-model")
    started = time.monotonic()
    check = _llm_check()
    assert time.monotonic() - started < 5
    assert not check.ok and "not reachable" in check.detail and "EVIGRAPH_LLM_BASE_URL" in check.hint


def test_misconfigured_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", "localhost:11434")
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "test-model")
    check = _llm_check()
    assert not check.ok and "is not an http(s) URL" in check.detail and "EVIGRAPH_LLM_BASE_URL" in check.hint


def test_cli_doctor_prints_the_line_without_the_key(replay_server: ReplayServer) -> None:
    env = {"EVIGRAPH_LLM_BASE_URL": replay_server.url, "EVIGRAPH_LLM_MODEL": "test-model", "EVIGRAPH_LLM_API_KEY": KEY}
    result = run_cli("doctor", env=env)
    assert result.code == 0, result.err
    assert "ok  llm        openai:test-model" in result.out and "reachable" in result.out
    assert KEY not in result.out + result.err


def test_a_one_model_server_is_told_the_names_to_match(
    replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp's servers list the model file they serve, whatever name a client asks for."""
    replay_server.models = ["/models/SmolLM2-135M-Instruct.Q4_1.gguf"]
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "smollm2")
    check = _llm_check()
    assert not check.ok
    assert "EVIGRAPH_LLM_MODEL=/models/SmolLM2-135M-Instruct.Q4_1.gguf" in check.hint
    assert "--model_alias smollm2" in check.hint and "--alias smollm2" in check.hint


def test_an_ollama_with_one_model_pulled_is_still_told_to_pull(
    replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay_server.models = ["qwen2.5:7b"]
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "mistral")
    check = _llm_check()
    assert not check.ok and "ollama pull mistral" in check.hint and "--alias" not in check.hint
