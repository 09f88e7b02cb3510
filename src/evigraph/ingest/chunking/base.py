"""The chunking contract: a loaded document in, passages with their locations out."""

from __future__ import annotations

from abc import ABC, abstractmethod

from evigraph.models import LoadedDocument, TextChunk


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
