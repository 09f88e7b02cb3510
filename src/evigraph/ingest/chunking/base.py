"""The chunking contract: a loaded document in, passages with their locations out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evigraph.models import LoadedDocument, TextChunk

if TYPE_CHECKING:
    from evigraph.ingest.extraction.base import ExtractionRun


class ChunkingStrategy(ABC):
    """Splits a document into passages.

    Chunks carry character offsets into `document.text` (so a citation can point at the exact
    span), the page they start on and, for structured documents, their heading breadcrumbs.
    Chunking is synchronous and CPU-bound; the pipeline runs it off the event loop.

    Example::

        class ParagraphChunking(ChunkingStrategy):
            def chunk(self, document):
                out, pos = [], 0
                for i, para in enumerate(document.text.split("\\n\\n")):
                    start = document.text.index(para, pos); pos = start + len(para)
                    out.append(TextChunk(index=i, text=para, start=start, end=pos))
                return out
    """

    name: str = "custom"

    @abstractmethod
    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        """Return the passages of `document`, indexed from 0 in reading order, none empty."""

    def for_run(self, run: ExtractionRun) -> ChunkingStrategy:
        """The chunker one ingest uses: one that asks a model (`ContextualChunking`) returns a copy
        bound to the ingest's LLM, cache and token budget, and raises `ConfigurationError` here
        for what is missing, before anything is written; the others return themselves."""
        return self

    async def contextualize(
        self, documents: Sequence[tuple[LoadedDocument, Sequence[TextChunk]]]
    ) -> list[Sequence[TextChunk] | Exception]:
        """Per document, its chunks with their `context` set, or the error that failed it.

        Runs after `chunk`, in the event loop, as writing a context may wait on a model. An error
        fails its document alone (a `CeilingReached` leaves it for a later run); a
        `ConfigurationError` raised here stops the ingest. By default the chunks are returned as cut.
        """
        return [chunks for _, chunks in documents]
