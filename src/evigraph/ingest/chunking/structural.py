"""Chunks that follow the document's own structure: one section, one chunk, when it fits.

A section under its heading is the unit its author meant to be read together, so chunking along
sections keeps related statements in one chunk and gives each chunk breadcrumbs ("Guide >
Install > Linux") that both the embedding and a human reading a citation can use. Chunks never
straddle two sections, so the breadcrumbs of a chunk are always true of all of its text.

Within a section, blocks (the heading line, paragraphs, lists, tables, code) are packed whole up
to the token cap. Only a block larger than the cap on its own is split: prose by the fallback
chunker, a table or code block line by line (a row or a code line stays whole) with the fallback
only for a single line over the cap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.chunking.sentence import (
    SentenceTokenCapChunking,
    Span,
    chunks_from_spans,
    trim_span,
)
from evigraph.models import Element, LoadedDocument, TextChunk
from evigraph.providers.tokenizers import Tokenizer, default_tokenizer

_LINE_KINDS = frozenset({"table", "code"})
_DEFAULT_OVERLAP = 2


@dataclass
class _Block:
    start: int
    end: int
    kind: str
    tokens: int


@dataclass
class _Section:
    breadcrumbs: tuple[str, ...]
    blocks: list[_Block] = field(default_factory=list)


class StructuralChunking(ChunkingStrategy):
    """Section-aware chunks up to `max_tokens`, each carrying its heading breadcrumbs.

    `fallback` splits what does not fit and chunks documents without `elements`; by default it
    is `SentenceTokenCapChunking(max_tokens, overlap_sentences)`. `overlap_sentences` only
    configures that default, so passing it together with `fallback` is an error rather than an
    option silently ignored.
    """

    name = "structural"

    def __init__(
        self,
        max_tokens: int = 384,
        overlap_sentences: int | None = None,
        fallback: ChunkingStrategy | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if fallback is not None and overlap_sentences is not None:
            raise ConfigurationError(
                "overlap_sentences cannot be combined with fallback=",
                "configure the overlap on the fallback chunker itself",
            )
        if max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be at least 1, got {max_tokens}", "use e.g. 384")
        self.max_tokens = max_tokens
        self.tokenizer = tokenizer or default_tokenizer()
        self.fallback: ChunkingStrategy = fallback or SentenceTokenCapChunking(
            max_tokens,
            _DEFAULT_OVERLAP if overlap_sentences is None else overlap_sentences,
            self.tokenizer,
        )

    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        if not document.elements:
            return self.fallback.chunk(document)
        spans: list[tuple[int, int, tuple[str, ...]]] = []
        for section in self._sections(document):
            for s, e in self._pack_section(document, section):
                spans.append((s, e, section.breadcrumbs))
        return chunks_from_spans(document, spans)

    # -- elements to sections ------------------------------------------------------------------

    def _sections(self, document: LoadedDocument) -> list[_Section]:
        """Group elements under their headings; a heading-only section joins its first child."""
        text = document.text
        count = self.tokenizer.count
        stack: list[tuple[int, str]] = []
        sections: list[_Section] = [_Section(())]
        prev_end = 0
        elements: list[Element] = sorted(document.elements or (), key=lambda el: (el.start, el.end))
        for el in elements:
            span = trim_span(text, max(el.start, prev_end), min(el.end, len(text)))
            if span is None:
                continue  # empty, or entirely inside the previous element
            start, end = span
            block = _Block(start, end, el.kind, count(text[prev_end:end]))
            prev_end = end
            if el.kind == "heading" and el.text.strip():
                level = el.level if el.level > 0 else 1
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, el.text.strip()))
                crumbs = tuple(t for _, t in stack)
                current = sections[-1]
                if _only_headings(current) and crumbs[: len(current.breadcrumbs)] == current.breadcrumbs:
                    # Parent heading with no text of its own: keep its line with the child section.
                    current.breadcrumbs = crumbs
                elif current.breadcrumbs != crumbs or current.blocks:
                    sections.append(_Section(crumbs))
            sections[-1].blocks.append(block)
        return [s for s in sections if s.blocks]

    # -- sections to chunk spans ---------------------------------------------------------------

    def _pack_section(self, document: LoadedDocument, section: _Section) -> list[Span]:
        text = document.text
        cap = self.max_tokens
        count = self.tokenizer.count
        out: list[Span] = []
        group: list[_Block] = []
        total = 0

        def flush() -> None:
            if group:
                out.extend(self._fit(document, group))

        for block in section.blocks:
            if block.tokens > cap and count(text[block.start : block.end]) > cap:
                # Too big on its own. A pending heading line goes with the first piece.
                if group and all(b.kind == "heading" for b in group) and block.kind not in _LINE_KINDS:
                    out.extend(self._split(document, group[0].start, block.end, block.kind))
                else:
                    flush()
                    out.extend(self._split(document, block.start, block.end, block.kind))
                group, total = [], 0
                continue
            if group and total + block.tokens > cap:
                flush()
                group, total = [], 0
            group.append(block)
            total += block.tokens
        flush()
        return out

    def _fit(self, document: LoadedDocument, blocks: list[_Block]) -> list[Span]:
        """Check a packed group's real count; the rare overshoot is split between blocks."""
        start, end = blocks[0].start, blocks[-1].end
        if self.tokenizer.count(document.text[start:end]) <= self.max_tokens:
            return [(start, end)]
        if len(blocks) == 1:
            return self._split(document, start, end, blocks[0].kind)
        return [*self._fit(document, blocks[:-1]), *self._fit(document, blocks[-1:])]

    def _split(self, document: LoadedDocument, start: int, end: int, kind: str) -> list[Span]:
        if kind in _LINE_KINDS:
            return self._split_lines(document, start, end)
        return self._fallback_spans(document, start, end)

    def _split_lines(self, document: LoadedDocument, start: int, end: int) -> list[Span]:
        """Pack whole lines of a table or code block; only a line over the cap is split further."""
        text = document.text
        cap = self.max_tokens
        count = self.tokenizer.count
        out: list[Span] = []
        group_start = -1
        group_end = -1
        total = 0
        pos = start
        while pos < end:
            nl = text.find("\n", pos, end)
            line_end = end if nl < 0 else nl
            n = count(text[group_end if group_start >= 0 else pos : line_end])
            if group_start >= 0 and total + n <= cap:
                group_end, total = line_end, total + n
            else:
                if group_start >= 0:
                    out.extend(self._fit_lines(document, group_start, group_end))
                    n = count(text[pos:line_end])
                group_start, group_end, total = pos, line_end, n
            pos = line_end + 1
        if group_start >= 0:
            out.extend(self._fit_lines(document, group_start, group_end))
        return out

    def _fit_lines(self, document: LoadedDocument, start: int, end: int) -> list[Span]:
        text = document.text
        if self.tokenizer.count(text[start:end]) <= self.max_tokens:
            return [(start, end)]
        nl = text.rfind("\n", start, end)
        if nl < 0:  # a single line over the cap
            return self._fallback_spans(document, start, end)
        return [*self._fit_lines(document, start, nl), *self._fit_lines(document, nl + 1, end)]

    def _fallback_spans(self, document: LoadedDocument, start: int, end: int) -> list[Span]:
        """Spans of the fallback chunker over `text[start:end]`, as document offsets."""
        fallback = self.fallback
        if isinstance(fallback, SentenceTokenCapChunking):
            return fallback.spans(document.text, start, end)
        part = LoadedDocument(
            key=document.key,
            title=document.title,
            path=document.path,
            text=document.text[start:end],
            loader=document.loader,
            elements=None,
            pages=None,
        )
        out: list[Span] = []
        for c in fallback.chunk(part):
            if 0 <= c.start < c.end <= len(part.text):
                out.append((c.start + start, c.end + start))
        return out


def _only_headings(section: _Section) -> bool:
    return bool(section.blocks) and all(b.kind == "heading" for b in section.blocks)
