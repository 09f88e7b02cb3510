"""The retrieval and reranking contracts `KnowledgeBase(retrieval=..., reranker=...)` accepts.

A strategy finds candidates; a reranker reorders the passages among them. The template method
`RetrievalStrategy.retrieve` joins the two, so every strategy, a user's included, gets the same
reranking and the same cut to `top_k`: a strategy asked for more candidates than `top_k` (because a
reranker follows) returns them, the reranker orders them and only then is the list cut.
Numbering is not done here: the knowledge base numbers what `retrieve` returns with its ledger.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evigraph.errors import ConfigurationError
from evigraph.evidence.items import PassageItem
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.query import RetrieveInput
from evigraph.retrieval.result import RetrievalResult
from evigraph.store.base import GraphStore

if TYPE_CHECKING:
    from evigraph.retrieval.graph_stage import GraphStage


@dataclass(frozen=True)
class RetrievalContext:
    """What a strategy or reranker may use: the open (read-only for a search) store, the knowledge
    base's embedder (None without one) and its graph ranking state (None where it has none)."""

    store: GraphStore
    embedder: Embedder | None = None
    graph: GraphStage | None = None


DEFAULT_CANDIDATES = 20
"""Passages a reranker sees unless it says otherwise: the default `top_k` twice over, so it can lift
a passage from the second half of a default retrieval's candidates into its top ten."""


class Reranker(ABC):
    """Reorders a retrieval's candidate passages, best first; it may drop some, never add."""

    name: str = "reranker"
    candidates: int = DEFAULT_CANDIDATES
    """How many passages the strategy hands over (at least `top_k`): a reranker can lift a passage
    only from among those it sees."""

    @abstractmethod
    async def rerank(
        self, question: str, passages: Sequence[PassageItem], context: RetrievalContext
    ) -> list[PassageItem]: ...


class RetrievalStrategy(ABC):
    """Finds the passages, entities, relations and facts for a question.

    Implement `search`; callers use `retrieve`, which asks `search` for enough candidates, lets the
    reranker reorder them and cuts the passages to `top_k`.
    """

    name: str = "strategy"

    @property
    def searches_fact_vectors(self) -> bool:
        """Whether `search` reads relations' fact vectors (`GraphStore.search_facts`): only then
        are facts embedded and their index built and saved, as they are most of the texts to
        embed (2wiki: 5.36 a passage) and a strategy that never reads them would pay for nothing."""
        return False

    async def retrieve(
        self, query: RetrieveInput, context: RetrievalContext, reranker: Reranker | None = None
    ) -> RetrievalResult:
        wanted = query.top_k if reranker is None else max(query.top_k, reranker.candidates)
        result = await self.search(query, context, wanted)
        passages = result.passages
        if reranker is not None and passages:
            given = {id(p) for p in passages}
            passages = await reranker.rerank(query.question, passages, context)
            if any(id(p) not in given for p in passages):
                raise ConfigurationError(
                    f"reranker {reranker.name!r} returned a passage it was not given",
                    hint="a reranker returns the passages it gets, reordered (it may drop some)",
                )
        result.passages = list(passages[: query.top_k])
        return result

    @abstractmethod
    async def search(self, query: RetrieveInput, context: RetrievalContext, passages: int) -> RetrievalResult:
        """Up to `passages` passages (more than `query.top_k` when a reranker follows), best first,
        and up to `query.top_k` of each other kind of item."""
