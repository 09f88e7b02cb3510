"""The built-in rerankers, by name: `cosine` (the knowledge base's embedder) and `cross-encoder:<model>`.

Retrieval's own order already blends full-text, vectors and the graph, measured on the dev sets;
a reranker is for a user who wants one signal to decide the final order (the reference's cosine
reranker over a plain vector retrieval), or a stronger model read over the candidates.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evigraph.errors import ConfigurationError
from evigraph.evidence.items import PassageItem
from evigraph.extras import requires, torch_install_hint
from evigraph.retrieval.strategy import DEFAULT_CANDIDATES, Reranker, RetrievalContext
from evigraph.retrieval.vectors import question_vector
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.providers.cross_encoders import CrossEncoderModel


def _ordered(passages: Sequence[PassageItem], scores: Sequence[float], name: str) -> list[PassageItem]:
    """The passages by `scores`, best first (ties keep retrieval's order), each carrying its score
    as `score` and under `scores[name]`, the retrieval's own scores kept beside it."""
    for p, s in zip(passages, scores, strict=True):
        p.scores = {**p.scores, name: s}
        p.score = s
    order = sorted(range(len(passages)), key=lambda i: -scores[i])
    return [passages[i] for i in order]


class CosineReranker(Reranker):
    """Orders passages by the cosine between the question's vector and the passage text's, from the
    knowledge base's embedder (the same model its stored vectors come from)."""

    name = "cosine"

    def __init__(self, candidates: int = DEFAULT_CANDIDATES) -> None:
        self.candidates = _positive(candidates)

    async def rerank(
        self, question: str, passages: Sequence[PassageItem], context: RetrievalContext
    ) -> list[PassageItem]:
        embedder = context.embedder
        if embedder is None:
            raise ConfigurationError(
                "the cosine reranker needs an embedder",
                hint="open the knowledge base with one (KnowledgeBase(embedder='minilm')), or use another reranker",
            )
        asked = await question_vector(context.store, embedder, question)
        if asked is None:
            raise ConfigurationError(
                "the cosine reranker needs embedded passages, and none are",
                hint="run `evigraph finalize` (KnowledgeBase.finalize()) to embed them",
            )
        vectors = await asyncio.to_thread(embedder.embed, [p.text for p in passages])
        return _ordered(passages, [_cosine(asked, v) for v in vectors], self.name)


class CrossEncoderReranker(Reranker):
    """Orders passages by a cross-encoder's relevance score (`CrossEncoderModel`, sentence-transformers)."""

    name = "cross-encoder"

    def __init__(
        self,
        model: str | CrossEncoderModel = "cross-encoder/ms-marco-MiniLM-L6-v2",
        candidates: int = DEFAULT_CANDIDATES,
    ) -> None:
        from evigraph.providers.cross_encoders import CrossEncoderModel

        self.model = model if isinstance(model, CrossEncoderModel) else CrossEncoderModel(model)
        self.candidates = _positive(candidates)

    async def rerank(
        self, question: str, passages: Sequence[PassageItem], context: RetrievalContext
    ) -> list[PassageItem]:
        scores = await asyncio.to_thread(self.model.score, question, [p.text for p in passages])
        return _ordered(passages, scores, self.name)


def _positive(candidates: int) -> int:
    if candidates < 1:
        raise ConfigurationError(f"candidates must be at least 1, not {candidates}", hint="e.g. candidates=20")
    return candidates


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


RERANKERS: Registry[Reranker] = Registry("reranker")
"""Rerankers by spec, as `KnowledgeBase(reranker=...)` names them."""
RERANKERS.register(
    "cosine",
    CosineReranker,
    description="reorder the candidates by their cosine to the question, from the knowledge base's embedder",
)
RERANKERS.register(
    "cross-encoder",
    CrossEncoderReranker,
    argument="model",
    description="score each candidate with a sentence-transformers cross-encoder read over question and passage "
    "(a hub name or a local folder; one model pass per candidate)",
    check=requires("sentence_transformers", "sentence-transformers", "embed-st", torch_install_hint),
)


def reranker_by_name(spec: str) -> Reranker:
    return RERANKERS.create(spec)
