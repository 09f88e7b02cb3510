"""A question's vector, checked against the model the knowledge base is embedded with."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from evigraph.errors import ConfigurationError
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore


async def question_vector(store: GraphStore, embedder: Embedder, question: str) -> list[float] | None:
    """The question's vector, or None when nothing is embedded yet; refuses a mismatched model.

    A vector from another model would rank passages by noise, so a mismatch is an error, not a
    silent fall-back to full-text.
    """
    return (await question_vectors(store, embedder, question, ()))[0]


async def question_vectors(
    store: GraphStore, embedder: Embedder, question: str, spans: Sequence[tuple[int, int]]
) -> tuple[list[float] | None, list[list[float]]]:
    """The question's vector and the vectors of the names at `spans` in it, from one model pass.

    The names' vectors are pooled from the question's own token vectors (`embed_with_spans`), as
    passages' sentences are at ingest: a name costs no model input, where a batch of the question
    and its names cost about 7 ms per name with MiniLM (the batch pads each name to the question's
    length), and ranking on the dev sets was as good (MuSiQue recall@5 67.6 pooled, 67.2 embedded
    alone). A model that embeds queries differently from other text (an instruction prefix) gets
    the question and its names in two calls.
    """
    stored = await store.embedding_model()
    if stored is None:
        return None, []  # nothing embedded yet: full-text and graph only
    name, dimension = stored
    if name != embedder.name:
        raise ConfigurationError(
            f"the knowledge base is embedded with {name!r}, not {embedder.name!r}",
            hint=f"search with embedder {name!r}, or re-embed every passage: `evigraph reembed --embedder ...` "
            "(KnowledgeBase.reembed())",
        )
    others: list[list[float]] = []
    if not spans:
        vec = await asyncio.to_thread(embedder.embed_query, question)
    elif type(embedder).embed_query is Embedder.embed_query:
        vectors, pooled = await asyncio.to_thread(embedder.embed_with_spans, [question], [list(spans)])
        vec, others = vectors[0], pooled[0]
    else:
        vec = await asyncio.to_thread(embedder.embed_query, question)
        others = await asyncio.to_thread(embedder.embed, [question[a:b] for a, b in spans])
    if len(vec) != dimension:
        raise ConfigurationError(
            f"the embedder gives {len(vec)} dimensions, the knowledge base holds {dimension}",
            hint="re-embed with `evigraph reembed` (KnowledgeBase.reembed())",
        )
    return vec, others


async def nearest_passages(store: GraphStore, embedder: Embedder | None, query: str, limit: int) -> list[str] | None:
    """Passage ids nearest to `query` by meaning, or None without an embedder or stored vectors."""
    if embedder is None:
        return None
    vector = await question_vector(store, embedder, query)
    return None if vector is None else [cid for cid, _ in await store.vector_search(vector, limit)]
