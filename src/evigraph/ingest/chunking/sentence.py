"""Sentence-aligned chunks under a token cap: the default chunker for unstructured text.

Extraction and embedding both work per chunk, and both degrade when a chunk starts or ends in the
middle of a sentence (a relation's two entities land in different chunks; an embedding mixes two
half-thoughts). So chunks are whole sentences, packed until the next one would break the token
budget of the model that reads them, and neighbouring chunks repeat the last few sentences so a
statement spanning a boundary is still seen whole once.

Cost stays linear in the text: each sentence is tokenized once (with the white space before it,
which makes the per-sentence counts add up to the count of the joined text), chunk sizes come from
prefix sums, and each finished chunk is counted once more to guarantee the cap exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.sentences import iter_sentences
from evigraph.models import LoadedDocument, TextChunk
from evigraph.providers.tokenizers import Tokenizer, default_tokenizer

Span = tuple[int, int]

_WORD = re.compile(r"\S+")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")  # always a sentence boundary for split_sentences


class Unit(NamedTuple):
    """A sentence, or a piece of an over-long sentence: the atom chunks are packed from."""

    start: int
    end: int
    tokens: int


def trim_span(text: str, start: int, end: int) -> Span | None:
    """The span without surrounding white space, or None when nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def chunks_from_spans(document: LoadedDocument, spans: Iterable[tuple[int, int, tuple[str, ...]]]) -> list[TextChunk]:
    """Turn (start, end, breadcrumbs) spans into indexed chunks, dropping white-space-only ones.

    Shared by the chunkers so that every one of them guarantees the same contract: indexes from 0,
    `document.text[start:end] == chunk.text`, a page for paged documents, nothing empty.
    """
    text = document.text
    out: list[TextChunk] = []
    for start, end, crumbs in spans:
        span = trim_span(text, start, end)
        if span is None:
            continue
        s, e = span
        out.append(
            TextChunk(index=len(out), text=text[s:e], start=s, end=e, breadcrumbs=crumbs, page=document.page_at(s))
        )
    return out


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> Iterator[Span]:
    """The sentences of `text[start:end]` (as `split_sentences` finds them), as offsets into `text`."""
    end = len(text) if end is None else end
    for s, e in iter_sentences(text[start:end]):  # a slice seen once: not worth caching
        yield s + start, e + start


class SentenceTokenCapChunking(ChunkingStrategy):
    """Whole sentences up to `max_tokens` per chunk, overlapping by `overlap_sentences`.

    A sentence longer than the cap on its own is the only thing ever split: by words, and a single
    word longer than the cap (a URL, a base64 blob) by characters.
    """

    name = "sentence"

    def __init__(self, max_tokens: int = 384, overlap_sentences: int = 2, tokenizer: Tokenizer | None = None) -> None:
        if max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be at least 1, got {max_tokens}", "use e.g. 384")
        if overlap_sentences < 0:
            raise ConfigurationError(
                f"overlap_sentences must be 0 or more, got {overlap_sentences}", "use e.g. 2, or 0 for none"
            )
        self.max_tokens = max_tokens
        self.overlap_sentences = overlap_sentences
        self.tokenizer = tokenizer or default_tokenizer()

    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        spans = self.spans(document.text)
        return chunks_from_spans(document, ((s, e, ()) for s, e in spans))

    def spans(self, text: str, start: int = 0, end: int | None = None) -> list[Span]:
        """Chunk spans of `text[start:end]`, as offsets into `text`.

        Exposed so structural chunking can split one oversized section without copying the
        document into a new one.
        """
        end = len(text) if end is None else end
        return self._pack(text, self.units(text, start, end))

    # -- sentences to units --------------------------------------------------------------------

    def units(self, text: str, start: int, end: int) -> list[Unit]:
        """Sentences of the region with their token counts; over-long ones pre-split."""
        count = self.tokenizer.count
        units: list[Unit] = []
        prev_end = start
        for s, e in sentence_spans(text, start, end):
            n = count(text[prev_end:e])  # with the gap before it, so counts add up
            if n > self.max_tokens:
                n = count(text[s:e])
                if n > self.max_tokens:
                    units.extend(self._split_long(text, s, e))
                    prev_end = e
                    continue
            units.append(Unit(s, e, n))
            prev_end = e
        return units

    def _split_long(self, text: str, start: int, end: int) -> list[Unit]:
        """Split one sentence over the cap at word boundaries into pieces under the cap."""
        count = self.tokenizer.count
        cap = self.max_tokens
        out: list[Unit] = []
        piece_start = -1
        piece_end = -1
        piece_tokens = 0

        def flush() -> None:
            if piece_start >= 0:
                out.extend(self._verified(text, piece_start, piece_end))

        prev = start
        for m in _WORD.finditer(text, start, end):
            ws, we = m.start(), m.end()
            n = count(text[prev:we])
            prev = we
            if n > cap and count(text[ws:we]) > cap:
                flush()
                piece_start, piece_tokens = -1, 0
                out.extend(self._bisect(text, ws, we))
                continue
            if piece_start >= 0 and piece_tokens + n <= cap:
                piece_end, piece_tokens = we, piece_tokens + n
            else:
                flush()
                piece_start, piece_end, piece_tokens = ws, we, n
        flush()
        return out

    def _verified(self, text: str, start: int, end: int) -> list[Unit]:
        n = self.tokenizer.count(text[start:end])
        return [Unit(start, end, n)] if n <= self.max_tokens else self._bisect(text, start, end)

    def _bisect(self, text: str, start: int, end: int) -> list[Unit]:
        """Halve a span until each half fits; the last resort for text without usable breaks."""
        n = self.tokenizer.count(text[start:end])
        if n <= self.max_tokens or end - start <= 1:
            return [Unit(start, end, n)]
        mid = (start + end) // 2
        space = text.rfind(" ", start + 1, mid + 1)
        if space > start + (mid - start) // 2:
            mid = space
        out: list[Unit] = []
        for s, e in ((start, mid), (mid, end)):
            span = trim_span(text, s, e)
            if span is not None:
                out.extend(self._bisect(text, *span))
        return out

    # -- units to chunks -----------------------------------------------------------------------

    def _pack(self, text: str, units: list[Unit]) -> list[Span]:
        """Greedy packing with overlap; every chunk adds at least one unit the previous lacked."""
        if not units:
            return []
        cap = self.max_tokens
        count = self.tokenizer.count
        prefix = [0]
        for u in units:
            prefix.append(prefix[-1] + u.tokens)

        spans: list[Span] = []
        a = 0
        new_from = 0  # first unit not in the previous chunk
        n = len(units)
        while a < n:
            b = max(a, new_from) + 1
            while b < n and prefix[b + 1] - prefix[a] <= cap:
                b += 1
            # Per-unit counts are estimates of the joined text; check the real count once.
            while b - a > 1 and count(text[units[a].start : units[b - 1].end]) > cap:
                if b - 1 > max(a, new_from):
                    b -= 1
                else:
                    a += 1
            spans.append((units[a].start, units[b - 1].end))
            if b >= n:
                break
            nxt = max(b - self.overlap_sentences, a + 1)
            while nxt < b and prefix[b + 1] - prefix[nxt] > cap:
                nxt += 1  # shrink the overlap so the next chunk still has room for new text
            a, new_from = nxt, b
        return spans
