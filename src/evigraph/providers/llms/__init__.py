"""LLMs: chat models for extraction, resolution, contextual chunks and cited answers.

No LLM is the default: ingest and search work offline without one. `LLM` is the contract;
`OpenAICompatibleLLM` speaks to OpenAI, Azure deployments, Ollama, vLLM and llama.cpp servers.
`LLMS` names them for `--llm`; the classes load on first use, so the CLI lists the forms
without importing httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.lazy import lazy_exports
from evigraph.providers.llms.registry import LLM_FORMS, LLMS, llm_from_env, llm_from_spec, llm_spec_from_env

if TYPE_CHECKING:
    from evigraph.providers.llms.base import (
        LLM,
        ChatRequest,
        ChatResult,
        ChatStream,
        Message,
        StreamPart,
        TextStream,
        Usage,
    )
    from evigraph.providers.llms.openai import OpenAICompatibleLLM, Probe

__getattr__ = lazy_exports(
    __name__,
    {
        "LLM": "evigraph.providers.llms.base",
        "ChatRequest": "evigraph.providers.llms.base",
        "ChatResult": "evigraph.providers.llms.base",
        "ChatStream": "evigraph.providers.llms.base",
        "Message": "evigraph.providers.llms.base",
        "StreamPart": "evigraph.providers.llms.base",
        "TextStream": "evigraph.providers.llms.base",
        "Usage": "evigraph.providers.llms.base",
        "OpenAICompatibleLLM": "evigraph.providers.llms.openai",
        "Probe": "evigraph.providers.llms.openai",
    },
)

__all__ = [
    "LLM",
    "LLMS",
    "LLM_FORMS",
    "ChatRequest",
    "ChatResult",
    "ChatStream",
    "Message",
    "OpenAICompatibleLLM",
    "Probe",
    "StreamPart",
    "TextStream",
    "Usage",
    "llm_from_env",
    "llm_from_spec",
    "llm_spec_from_env",
]
