"""Choosing an embedder by a short name, as the CLI and the environment do."""

from __future__ import annotations

import os

from evigraph.errors import ConfigurationError
from evigraph.providers.embedders.base import Embedder
from evigraph.providers.embedders.fastembed import FastEmbedEmbedder
from evigraph.providers.embedders.openai import OpenAIEmbedder
from evigraph.providers.embedders.sentence_transformers import SentenceTransformerEmbedder

# --------------------------------------------------------------------------------------------
# Choosing an embedder by name
# --------------------------------------------------------------------------------------------

EMBEDDER_FORMS = (
    "none",
    "minilm",
    "sentence-transformers:<model or folder>",
    "fastembed:<model>",
    "openai:<model>",
)


def embedder_by_name(spec: str) -> Embedder | None:
    """The embedder a short spec names, as the CLI's `--embedder` and `EVIGRAPH_EMBEDDER` use it.

    `openai:` reads its endpoint from EVIGRAPH_EMBED_BASE_URL and the name of its key variable
    from EVIGRAPH_EMBED_API_KEY_ENV, so one spec string works for OpenAI and local servers.
    """
    text = spec.strip()
    if text.lower() in ("", "none", "off"):
        return None
    if text.lower() == "minilm":
        return SentenceTransformerEmbedder()
    kind, sep, model = text.partition(":")
    kind, model = kind.strip().lower(), model.strip()
    if sep and model:
        if kind in ("sentence-transformers", "st"):
            return SentenceTransformerEmbedder(model)
        if kind == "fastembed":
            return FastEmbedEmbedder(model)
        if kind == "openai":
            return OpenAIEmbedder(
                model,
                base_url=os.environ.get("EVIGRAPH_EMBED_BASE_URL") or None,
                api_key_env=os.environ.get("EVIGRAPH_EMBED_API_KEY_ENV") or "OPENAI_API_KEY",
            )
    raise ConfigurationError(f"unknown embedder {spec!r}", "use one of: " + ", ".join(EMBEDDER_FORMS))


def embedder_from_env() -> Embedder | None:
    """The embedder named by EVIGRAPH_EMBEDDER, or None (full-text and graph search only)."""
    return embedder_by_name(os.environ.get("EVIGRAPH_EMBEDDER", ""))
