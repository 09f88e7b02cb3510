"""Choosing an LLM: specs, the environment, the knowledge base's memory, `--llm`, and bad settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, chat_reply

from evigraph.errors import ConfigurationError, LLMConfigurationError
from evigraph.kb import KnowledgeBase
from evigraph.kb.llm import LLM_SETTING
from evigraph.providers.llms import (
    LLMS,
    Message,
    OpenAICompatibleLLM,
    llm_from_env,
    llm_from_spec,
    llm_spec_from_env,
)


def _one_line(exc: ConfigurationError) -> str:
    assert "\n" not in str(exc) and exc.hint
    return str(exc)


def test_import_evigraph_and_the_registry_load_no_httpx() -> None:
    code = (
        "import evigraph, sys\nevigraph.KnowledgeBase\nfrom evigraph.providers.llms import LLMS\n"
        "from evigraph.cli.parser import build_parser\nbuild_parser(['ingest'])\nprint('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_spec_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert llm_from_spec("") is None and llm_from_spec("none") is None and llm_from_spec(" Off ") is None
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    vllm = llm_from_spec("openai:meta-llama/Llama-3.1-8B-Instruct")
    assert isinstance(vllm, OpenAICompatibleLLM)
    assert vllm.model == "meta-llama/Llama-3.1-8B-Instruct" and vllm.endpoint.base_url == "http://127.0.0.1:8000/v1"
    assert vllm.spec == "openai:meta-llama/Llama-3.1-8B-Instruct"
    monkeypatch.delenv("EVIGRAPH_LLM_BASE_URL")
    ollama = llm_from_spec("ollama:qwen2.5:7b")  # model names hold colons
    assert isinstance(ollama, OpenAICompatibleLLM)
    assert ollama.model == "qwen2.5:7b" and ollama.endpoint.base_url == "http://localhost:11434/v1"
    assert ollama.spec == "ollama:qwen2.5:7b"
    assert LLMS.forms() == ("none", "openai:<model>", "ollama:<model>")


@pytest.mark.parametrize("spec", ["gpt-4o-mini", "openai", "openai:", "none:x", "anthropic:claude"])
def test_bad_specs_list_the_forms(spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        llm_from_spec(spec)
    assert "openai:<model>" in info.value.hint and "ollama:<model>" in info.value.hint


def test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert llm_spec_from_env() is None and llm_from_env() is None
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "llama3.1")
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", "http://localhost:11434/v1/chat/completions")  # pasted from curl
    monkeypatch.setenv("EVIGRAPH_LLM_TIMEOUT", "45")
    monkeypatch.setenv("EVIGRAPH_LLM_CONCURRENCY", "2")
    assert llm_spec_from_env() == "openai:llama3.1"
    llm = llm_from_env()
    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.model == "llama3.1" and llm.endpoint.chat_url == "http://localhost:11434/v1/chat/completions"
    assert (llm.timeout, llm.concurrency) == (45.0, 2)
    assert repr(llm) == "OpenAICompatibleLLM(model='llama3.1', base_url='http://localhost:11434/v1', api_key=None)"


def test_no_model_is_a_one_line_error() -> None:
    with pytest.raises(LLMConfigurationError) as info:
        OpenAICompatibleLLM(base_url="http://localhost:11434/v1")
    assert "no LLM model given" in _one_line(info.value) and "EVIGRAPH_LLM_MODEL" in info.value.hint


@pytest.mark.parametrize("url", ["localhost:11434/v1", "ftp://example.com/v1", "http:///v1", "http://host:port/v1"])
def test_bad_url_is_a_one_line_error(url: str) -> None:
    with pytest.raises(LLMConfigurationError) as info:
        OpenAICompatibleLLM("m", base_url=url)
    assert "is not an http(s) URL" in _one_line(info.value)
    assert "EVIGRAPH_LLM_BASE_URL" in info.value.hint and "http://localhost:11434/v1" in info.value.hint


def test_bad_url_from_the_environment_masks_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", f"localhost:11434/v1?api-key={KEY}")
    with pytest.raises(LLMConfigurationError) as info:
        llm_from_spec("openai:m")
    assert KEY not in str(info.value)


def test_hosted_api_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMConfigurationError) as info:
        llm_from_spec("openai:gpt-4o-mini")  # no base URL: OpenAI itself
    assert "no API key for https://api.openai.com/v1" in _one_line(info.value)
    assert "EVIGRAPH_LLM_API_KEY" in info.value.hint
    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", KEY)
    assert isinstance(llm_from_spec("openai:gpt-4o-mini"), OpenAICompatibleLLM)


@pytest.mark.parametrize("variable", ["EVIGRAPH_LLM_TIMEOUT", "EVIGRAPH_LLM_CONCURRENCY"])
def test_bad_numbers_in_the_environment(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, "fast")
    with pytest.raises(ConfigurationError, match=f"{variable}='fast' is not a positive number"):
        llm_from_spec("ollama:m")


async def test_knowledge_base_remembers_the_spec_never_the_key(
    tmp_path: Path, replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIGRAPH_LLM_BASE_URL", replay_server.url)
    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", KEY)
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, llm="openai:test-model", extractor="rules") as kb:
        assert isinstance(kb.llm, OpenAICompatibleLLM)
        await kb.ingest(text="Ana Costa leads ReefWatch.", key="reef")
        assert await kb.store.get_setting(LLM_SETTING) == "openai:test-model"  # type: ignore[union-attr]
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())

    replay_server.queue(chat_reply("remembered"))
    async with KnowledgeBase(db) as kb:  # no llm given: the recorded one, URL and key from the environment
        await kb.status()
        llm = kb.llm
        assert isinstance(llm, OpenAICompatibleLLM) and llm.model == "test-model"
        assert (await llm.chat([Message.user("hi")])).text == "remembered"
    assert replay_server.requests[-1].header("authorization") == f"Bearer {KEY}"

    async with KnowledgeBase(db, llm="none") as kb:  # an explicit choice of none
        await kb.status()
        assert kb.llm is None


async def test_recorded_llm_that_cannot_be_built_fails_on_use_not_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIGRAPH_LLM_API_KEY", KEY)
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, llm="openai:gpt-4o-mini", extractor="rules") as kb:
        await kb.ingest(text="Ana Costa leads ReefWatch.", key="reef")
    monkeypatch.delenv("EVIGRAPH_LLM_API_KEY")
    async with KnowledgeBase(db) as kb:
        assert (await kb.status()).documents == 1  # reads need no LLM
        with pytest.raises(LLMConfigurationError, match="no API key"):
            _ = kb.llm


async def test_knowledge_base_takes_an_instance(tmp_path: Path, replay_server: ReplayServer) -> None:
    llm = OpenAICompatibleLLM("test-model", base_url=replay_server.url)
    async with KnowledgeBase(tmp_path / "kb.db", llm=llm, extractor="rules") as kb:
        assert kb.llm is llm
        await kb.ingest(text="Harbor Lab is in Lisbon.", key="lab")
        assert await kb.store.get_setting(LLM_SETTING) == "openai:test-model"  # type: ignore[union-attr]


def test_knowledge_base_refuses_a_bad_spec_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown llm"):
        KnowledgeBase(tmp_path / "kb.db", llm="gpt-4o")


def test_cli_takes_llm_for_ingest_and_finalize() -> None:
    from evigraph.cli.parser import build_parser

    parser = build_parser(["ingest"])
    assert parser.parse_args(["ingest", "docs", "--llm", "ollama:qwen2.5:7b"]).llm == "ollama:qwen2.5:7b"
    assert parser.parse_args(["finalize", "--llm", "openai:gpt-4o-mini"]).llm == "openai:gpt-4o-mini"
    assert parser.parse_args(["ingest", "docs"]).llm is None


def test_cli_llm_default_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from evigraph.cli.common import llm_arg
    from evigraph.cli.parser import build_parser

    args = build_parser(["ingest"]).parse_args(["ingest", "docs"])
    assert llm_arg(args) is None
    monkeypatch.setenv("EVIGRAPH_LLM_MODEL", "qwen2.5:7b")
    assert llm_arg(args) == "openai:qwen2.5:7b"
    args.llm = "none"
    assert llm_arg(args) == "none"
