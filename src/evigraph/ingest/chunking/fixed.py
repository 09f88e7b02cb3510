"""Fixed-size character windows: the predictable baseline.

Useful when chunk size must be uniform (benchmarks, embedding models with a hard character
budget) or when the text has no sentences to speak of (logs, CSV). Cuts move back to the nearest
white space within a short distance so words stay whole, and the overlap starts on a word
boundary too, without ever letting a chunk fail to advance.
"""

from __future__ import annotations

from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.chunking.sentence import Span, chunks_from_spans
from evigraph.models import LoadedDocument, TextChunk


class FixedSizeChunking(ChunkingStrategy):
    """Windows of at most `chunk_size` characters, consecutive windows sharing ~`chunk_overlap`."""

    name = "fixed"

    def __init__(self, chunk_size: int = 1000, chunk_overlap: int = 100) -> None:
        if chunk_size < 1:
            raise ConfigurationError(f"chunk_size must be at least 1, got {chunk_size}", "use e.g. 1000")
        if not 0 <= chunk_overlap < chunk_size:
            raise ConfigurationError(
                f"chunk_overlap must be between 0 and chunk_size - 1, got {chunk_overlap}",
                f"use a value below {chunk_size}, e.g. {chunk_size // 10}",
            )
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        # How far a cut may move back to find white space. Bounded by half the stride so every
        # window still ends past the previous one.
        self._slack = max(0, min(chunk_size // 5, (chunk_size - chunk_overlap - 1) // 2))

    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        return chunks_from_spans(document, ((s, e, ()) for s, e in self.spans(document.text)))

    def spans(self, text: str) -> list[Span]:
        n = len(text)
        out: list[Span] = []
        pos = 0
        while pos < n:
            end = min(pos + self.chunk_size, n)
            if end < n and not text[end].isspace() and not text[end - 1].isspace():
                end = self._cut_back(text, pos, end)
            out.append((pos, end))
            if end >= n:
                break
            nxt = max(end - self.chunk_overlap, pos + 1)
            pos = self._word_start(text, nxt, end) if self.chunk_overlap else end
        return out

    def _cut_back(self, text: str, pos: int, end: int) -> int:
        """Move a cut that would split a word back to the white space before that word."""
        floor = max(pos + 1, end - self._slack)
        for i in range(end - 1, floor - 1, -1):
            if text[i].isspace():
                return i
        return end

    @staticmethod
    def _word_start(text: str, nxt: int, end: int) -> int:
        """Start the overlap at the next word boundary, so no chunk opens with half a word."""
        if nxt == 0 or text[nxt - 1].isspace() or text[nxt].isspace():
            return nxt
        for i in range(nxt, end):
            if text[i].isspace():
                return i
        return nxt
