"""A question's vector, checked against the model the knowledge base is embedded with."""

from __future__ import annotations

import asyncio

from evigraph.errors import ConfigurationError
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore


async def question_vector(store: GraphStore, embedder: Embedder, question: str) -> list[float] | None:
    """The question's vector, or None when nothing is embedded yet; refuses a mismatched model.

    A vector from another model would rank passages by noise, so a mismatch is an error, not a
    silent fall-back to full-text.
    """
    stored = await store.embedding_model()
    if stored is None:
        return None  # nothing embedded yet: full-text and graph only
    name, dimension = stored
    if name != embedder.name:
        raise ConfigurationError(
            f"the knowledge base is embedded with {name!r}, not {embedder.name!r}",
            hint=f"search with embedder {name!r}, or re-embed every passage: `evigraph reembed --embedder ...` "
            "(KnowledgeBase.reembed())",
        )
    vec = await asyncio.to_thread(embedder.embed_query, question)
    if len(vec) != dimension:
        raise ConfigurationError(
            f"the embedder gives {len(vec)} dimensions, the knowledge base holds {dimension}",
            hint="re-embed with `evigraph reembed` (KnowledgeBase.reembed())",
        )
    return vec


async def nearest_passages(store: GraphStore, embedder: Embedder | None, query: str, limit: int) -> list[str] | None:
    """Passage ids nearest to `query` by meaning, or None without an embedder or stored vectors."""
    if embedder is None:
        return None
    vector = await question_vector(store, embedder, query)
    return None if vector is None else [cid for cid, _ in await store.vector_search(vector, limit)]
