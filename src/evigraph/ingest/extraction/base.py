"""The extraction contract: chunks and an ontology in, entities, relations and mentions out.

The same contract serves the offline extractors and the LLM extraction that comes later: an
LLM extractor is async by nature, so `extract` is async; CPU-bound extractors run their work in
a thread themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evigraph.ingest.extraction.budget import TokenBudget
from evigraph.models import GraphData, Ontology, TextChunk

if TYPE_CHECKING:
    from evigraph.providers.llms.base import LLM
    from evigraph.store.base import GraphStore


@dataclass(frozen=True)
class ExtractionRun:
    """What one ingest lends its extractor besides the chunks (and a chunker that asks a model,
    `ChunkingStrategy.for_run`): its LLM, its store, its budget.

    The LLM is asked for only by an extractor that needs one, as building it may fail (a key
    missing from the environment) where an offline ingest must not.
    """

    llm: Callable[[], LLM | None] = lambda: None
    store: GraphStore | None = None
    """Where extraction results are cached by passage content (`GraphStore.cached_extractions`)."""
    budget: TokenBudget = field(default_factory=TokenBudget)


class ExtractionStrategy(ABC):
    """Finds entities and relations in the chunks of one document.

    Entities must be typed with a label of `ontology` or `evigraph.models.UNKNOWN_LABEL`.
    Mentions give spans relative to each chunk's own text; relations name the chunks that
    state them by index.

    Example::

        class KeywordExtraction(ExtractionStrategy):
            async def extract(self, chunks, ontology):
                ents, mentions = [], []
                for c in chunks:
                    for m in re.finditer(r"\\bKuzu\\b", c.text):
                        e = ExtractedEntity.create("Kuzu", "Technology")
                        ents.append(e)
                        mentions.append(Mention(entity_id=e.id, chunk_index=c.index,
                                                spans=(Span(start=m.start(), end=m.end()),)))
                return GraphData(entities=tuple(ents), mentions=tuple(mentions))
    """

    name: str = "custom"

    queues_batches: bool = False
    """Whether an ingest may hand over a batch before the one before it is back: the rules
    extractor's worker process takes batches from its pipe in turn, so the next waits there, ready,
    instead of being sent once the last one's graphs were read back. Before the worker starts (or
    after it died) the two run in threads side by side, which costs nothing but memory for one
    batch. An extractor that may stop mid-ingest (a token ceiling) keeps False: a batch handed
    over early would be extracted past it."""

    @abstractmethod
    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        """Extract the graph stated by `chunks` (all from one document)."""

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        """Extract several documents at once; override to batch model calls across documents."""
        return [await self.extract(chunks, ontology) for chunks in documents]

    def for_run(self, run: ExtractionRun) -> ExtractionStrategy:
        """The extractor one ingest uses: an extractor with per-ingest state (an LLM's token budget,
        a cache in the store) returns a copy bound to `run`, so concurrent ingests keep their own
        accounts; one without returns itself. Raise `ConfigurationError` here for what is missing."""
        return self

    @property
    def offline(self) -> ExtractionStrategy:
        """The extractor for a search question's names: itself, or for one that calls a model, a
        local one, as a search must neither wait on a model nor pay for it."""
        return self
