"""Choosing an LLM by a short spec (`openai:<model>`, `ollama:<model>`), as `--llm`, the
environment and a knowledge base's recorded setting do.

The factories import the client only when called, so `evigraph --help` lists the forms without
loading httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.extras import requires
from evigraph.providers.llms.settings import EnvSettings
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.providers.llms.base import LLM
    from evigraph.providers.llms.openai import OpenAICompatibleLLM


def _no_llm() -> None:
    return None


def _openai(model: str) -> OpenAICompatibleLLM:
    """The endpoint and key come from EVIGRAPH_LLM_BASE_URL and EVIGRAPH_LLM_API_KEY, so one
    spec serves OpenAI, Azure, vLLM and llama.cpp alike and names no secret."""
    from evigraph.providers.llms.openai import OpenAICompatibleLLM

    return OpenAICompatibleLLM(model)


def _ollama(model: str) -> OpenAICompatibleLLM:
    from evigraph.providers.llms.openai import OpenAICompatibleLLM

    return OpenAICompatibleLLM(model, provider="ollama")


LLMS: Registry[LLM | None] = Registry("llm")
"""LLM specs; "none" builds no LLM (offline extraction and search only)."""
LLMS.register("none", _no_llm, aliases=("off",), description="no LLM: offline extraction and search only (the default)")
LLMS.register(
    "openai",
    _openai,
    argument="model",
    cheap=False,
    check=requires("httpx", "httpx", ""),
    description="any OpenAI-compatible chat endpoint: OpenAI, Azure, vLLM, llama.cpp (EVIGRAPH_LLM_BASE_URL, "
    "EVIGRAPH_LLM_API_KEY); remote ones cost per token",
)
LLMS.register(
    "ollama",
    _ollama,
    argument="model",
    cheap=False,
    check=requires("httpx", "httpx", ""),
    description="a model served by Ollama (http://localhost:11434/v1 unless EVIGRAPH_LLM_BASE_URL); local",
)

LLM_FORMS: tuple[str, ...] = LLMS.forms()


def llm_from_spec(spec: str) -> LLM | None:
    """The LLM a spec names; "" and "none" build none. Nothing is contacted."""
    return LLMS.create(spec) if spec.strip() else None


def llm_spec_from_env() -> str | None:
    """`openai:<EVIGRAPH_LLM_MODEL>` when the environment names a model, else None."""
    model = EnvSettings.read().model
    return f"openai:{model}" if model else None


def llm_from_env() -> LLM | None:
    """The LLM the environment configures (EVIGRAPH_LLM_MODEL and friends), or None."""
    spec = llm_spec_from_env()
    return llm_from_spec(spec) if spec else None


__all__ = ["LLMS", "LLM_FORMS", "llm_from_env", "llm_from_spec", "llm_spec_from_env"]
