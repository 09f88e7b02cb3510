"""Choosing an embedder by a short spec, as the CLI, the environment and the MCP server do.

The factories import their embedder only when called, so the CLI can print the forms in its
help without loading the HTTP and model code.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from evigraph.extras import requires, torch_install_hint
from evigraph.lazy import lazy_callable
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.providers.embedders.base import Embedder
    from evigraph.providers.embedders.openai import OpenAIEmbedder

_SENTENCE_TRANSFORMERS = lazy_callable(
    "evigraph.providers.embedders.sentence_transformers", "SentenceTransformerEmbedder"
)


def _no_embedder() -> None:
    return None


def _openai(model: str) -> OpenAIEmbedder:
    """Reads its endpoint from EVIGRAPH_EMBED_BASE_URL and the name of its key variable from
    EVIGRAPH_EMBED_API_KEY_ENV, so one spec string works for OpenAI and local servers."""
    from evigraph.providers.embedders.openai import OpenAIEmbedder

    return OpenAIEmbedder(
        model,
        base_url=os.environ.get("EVIGRAPH_EMBED_BASE_URL") or None,
        api_key_env=os.environ.get("EVIGRAPH_EMBED_API_KEY_ENV") or "OPENAI_API_KEY",
    )


EMBEDDERS: Registry[Embedder | None] = Registry("embedder")
"""Embedder specs; "none" builds no embedder (full-text and graph search only)."""
EMBEDDERS.register(
    "none",
    _no_embedder,
    aliases=("off",),
    description="no vectors: full-text and graph search only (the default)",
)
EMBEDDERS.register(
    "minilm",
    lazy_callable("evigraph.providers.embedders.minilm", "MiniLMEmbedder"),
    check=requires("tokenizers", "tokenizers", "embed"),
    description="all-MiniLM-L6-v2, shipped with evigraph and run without torch; local, 384 dimensions",
)
EMBEDDERS.register(
    "sentence-transformers",
    _SENTENCE_TRANSFORMERS,
    argument="model or folder",
    aliases=("st",),
    check=requires("sentence_transformers", "sentence-transformers", "embed-st", torch_install_hint),
    description="any sentence-transformers model name or local folder, on torch; local",
)
EMBEDDERS.register(
    "fastembed",
    lazy_callable("evigraph.providers.embedders.fastembed", "FastEmbedEmbedder"),
    argument="model",
    check=requires("fastembed", "fastembed", "embed-fastembed"),
    description="a FastEmbed (ONNX) model; local, no torch",
)
EMBEDDERS.register(
    "openai",
    _openai,
    argument="model",
    cheap=False,
    check=requires("httpx", "httpx", "embed-remote"),
    description="an OpenAI-compatible /embeddings endpoint (EVIGRAPH_EMBED_BASE_URL); remote, may cost per token",
)

EMBEDDER_FORMS: tuple[str, ...] = EMBEDDERS.forms()
"""How the built-in embedders are spelt (`EMBEDDERS` also lists later entries)."""


def embedder_by_name(spec: str) -> Embedder | None:
    """The embedder a short spec names, as the CLI's `--embedder` and `EVIGRAPH_EMBEDDER` use it.

    An empty spec means "not set" and builds none, like "none".
    """
    return EMBEDDERS.create(spec) if spec.strip() else None


def embedder_from_env() -> Embedder | None:
    """The embedder named by EVIGRAPH_EMBEDDER, or None (full-text and graph search only)."""
    return embedder_by_name(os.environ.get("EVIGRAPH_EMBEDDER", ""))
