"""A fast rule-based sentence splitter with character offsets.

Chunking must never cut a sentence and co-occurrence relations are per sentence, both on text
where loading a parser model per chunk would dominate ingest time; a regex splitter that knows
common abbreviations, initials and decimals is accurate enough for both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al fig figs no nos vol vols pp ed eds
    inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt capt rev
    u.s u.k u.n approx dept est
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_NEXT_CHAR = re.compile(r"\s*(\S)")
# A candidate boundary: terminal punctuation, optional closing quotes/brackets, then white space.
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n\s*\n")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Return (start, end) offsets of the sentences of `text`, white space trimmed."""
    return list(_split(text))


@functools.lru_cache(maxsize=1024)
def _split(text: str) -> tuple[tuple[int, int], ...]:
    """Kept for the texts split most: each passage is split by the rules extractor, then again
    by co-occurrence pairing and by bridge sentences, all while its batch (~64 documents) is
    processed, so a small cache serves the repeats."""
    return tuple(iter_sentences(text))


def iter_sentences(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end()
        if m.group().strip() and _is_false_boundary(text, m.start(), end):
            continue
        span = _trim(text, start, end)
        if span:
            yield span
        start = end
    span = _trim(text, start, len(text))
    if span:
        yield span


def _is_false_boundary(text: str, punct_start: int, end: int) -> bool:
    if text[punct_start] != ".":
        return False
    word_start = punct_start
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:punct_start].strip("\"'(“‘[").lower()
    if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
        return True  # "Dr. Smith", "J. R. R. Tolkien"
    if re.fullmatch(r"(?:[a-z]\.)+[a-z]", word):
        return True  # "U.S.A." style initialisms
    # A sentence starts with a capital, digit, quote or bracket; a lower-case word continues it.
    nxt = _NEXT_CHAR.match(text, end)
    return nxt is not None and nxt.group(1).islower()


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None
