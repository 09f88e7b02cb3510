"""Embedders: text to vectors, for semantic search over passages and facts.

No embedder is the default: everything works on full-text and graph search. An embedder is
named by `name` (the model) and `dimension`; the store records both and refuses to mix vectors
from another model. Embedding is always batched.
"""

from __future__ import annotations

from evigraph.providers.embedders.base import MINILM_NAME, Embedder
from evigraph.providers.embedders.fastembed import FastEmbedEmbedder
from evigraph.providers.embedders.openai import DEFAULT_OPENAI_BASE_URL, OpenAIEmbedder
from evigraph.providers.embedders.registry import EMBEDDER_FORMS, embedder_by_name, embedder_from_env
from evigraph.providers.embedders.sentence_transformers import SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "EMBEDDER_FORMS",
    "MINILM_NAME",
    "Embedder",
    "FastEmbedEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "embedder_by_name",
    "embedder_from_env",
]
