"""The extraction contract: chunks and an ontology in, entities, relations and mentions out.

The same contract serves the offline extractors and the LLM extraction that comes later: an
LLM extractor is async by nature, so `extract` is async; CPU-bound extractors run their work in
a thread themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from evigraph.models import GraphData, Ontology, TextChunk


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

    @abstractmethod
    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        """Extract the graph stated by `chunks` (all from one document)."""

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        """Extract several documents at once; override to batch model calls across documents."""
        return [await self.extract(chunks, ontology) for chunks in documents]
