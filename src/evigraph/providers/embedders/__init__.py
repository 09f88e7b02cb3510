"""Embedders: text to vectors, for semantic search over passages and facts.

No embedder is the default: everything works on full-text and graph search. An embedder is
named by `name` (the model) and `dimension`; the store records both and refuses to mix vectors
from another model. Embedding is always batched. `EMBEDDERS` names them; the classes are
imported on first use, so the CLI can list the forms without loading the HTTP and model code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.lazy import lazy_exports
from evigraph.providers.embedders.registry import EMBEDDER_FORMS, EMBEDDERS, embedder_by_name, embedder_from_env

if TYPE_CHECKING:
    from evigraph.providers.embedders.base import MINILM_NAME, Embedder
    from evigraph.providers.embedders.fastembed import FastEmbedEmbedder
    from evigraph.providers.embedders.minilm import MiniLMEmbedder
    from evigraph.providers.embedders.openai import DEFAULT_OPENAI_BASE_URL, OpenAIEmbedder
    from evigraph.providers.embedders.sentence_transformers import SentenceTransformerEmbedder

__getattr__ = lazy_exports(
    __name__,
    {
        "DEFAULT_OPENAI_BASE_URL": "evigraph.providers.embedders.openai",
        "MINILM_NAME": "evigraph.providers.embedders.base",
        "Embedder": "evigraph.providers.embedders.base",
        "FastEmbedEmbedder": "evigraph.providers.embedders.fastembed",
        "MiniLMEmbedder": "evigraph.providers.embedders.minilm",
        "OpenAIEmbedder": "evigraph.providers.embedders.openai",
        "SentenceTransformerEmbedder": "evigraph.providers.embedders.sentence_transformers",
    },
)

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "EMBEDDERS",
    "EMBEDDER_FORMS",
    "MINILM_NAME",
    "Embedder",
    "FastEmbedEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "embedder_by_name",
    "embedder_from_env",
]
