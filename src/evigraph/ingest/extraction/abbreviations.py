"""Abbreviations a text defines: "Denial of service (DoS)", "OOP (Object Oriented Programming)".

A definition names one thing twice, and the long form is often in lower case ("machine learning
(ML)") where no model or capital finds it. The pairing follows Schwartz and Hearst (2003, "A simple
algorithm for identifying abbreviation definitions in biomedical text"): the short form's letters,
read from the right, are found in order in the words next to it, its first letter opening a word,
and the long form starts at that word. Its published precision is 96 % at 82 % recall; the length
bounds below are theirs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.models import UNKNOWN_LABEL

_PARENTHESIS = re.compile(r"[ \t]+\(([^()\n]{2,120})\)")
_STOPS = "()\n.;:!?"
_BEFORE = 200
"""How far before a parenthesis the words that pair with it are read, within its line and sentence
(`_STOPS`)."""
_SHORT = re.compile(r"[A-Za-z0-9][\w./&-]{1,9}")
_WORD = re.compile(r"[A-Za-z0-9][\w'’-]*")
_MARKUP = "*_`\"“”'’[]"


class Definition(NamedTuple):
    """A short form and the long form it abbreviates, as hits on the text."""

    short: Hit
    long: Hit


def definitions(text: str) -> list[Definition]:
    """Every abbreviation `text` defines, in both orders: "long form (SF)" and "SF (long form)"."""
    out: list[Definition] = []
    for at, before, m in _parenthesised(text):
        inside = m.group(1).strip()
        if _short_form(inside):
            pair = _pair(text, inside, m.start(1) + m.group(1).find(inside), at, before)
        else:
            last = list(_WORD.finditer(before))
            if not last or not _short_form(last[-1].group()):
                continue
            sf = last[-1]
            pair = _pair(text, sf.group(), at + sf.start(), m.start(1), m.group(1), whole=True)
        if pair is not None:
            out.append(pair)
    return out


def _parenthesised(text: str) -> Iterator[tuple[int, str, re.Match[str]]]:
    """Each parenthesis after a space, with where the words before it start and those words: up to
    `_BEFORE` characters back, within its line and sentence, and after the last parenthesis taken.

    Found from each parenthesis backwards: one pattern for the words and the parenthesis together
    tried every start position forward to the sentence's end, and on a 100,000-passage ingest of
    long one-line paragraphs that search alone took 15 % of the time."""
    taken = 0
    for m in _PARENTHESIS.finditer(text):
        space, opening = m.start(), m.start(1) - 1
        low = max(taken, space - _BEFORE)
        start = max([low, *(text.rfind(c, low, space) + 1 for c in _STOPS)])
        end = max(space, start + 2)  # at least two characters, which may be spaces before the "("
        if end >= opening:
            continue
        taken = m.end()
        yield start, text[start:end], m


def _short_form(text: str) -> bool:
    """An abbreviation's shape: one token of 2 to 10 characters with a capital ("DoS", "ML",
    "HTTP/2"), not a word in capitals' first letter only ("Python")."""
    return _SHORT.fullmatch(text) is not None and sum(c.isupper() for c in text) >= 2 and any(c.isalpha() for c in text)


def _pair(text: str, short: str, short_at: int, area_at: int, area: str, whole: bool = False) -> Definition | None:
    """The definition of `short` by words of `area` (at `area_at` in `text`): the words ending the
    area, or with `whole` (a parenthesis) all of it, matching the short form's letters."""
    words = list(_WORD.finditer(area))
    limit = min(len(short) + 5, len(short) * 2)  # Schwartz and Hearst's bound on the long form's words
    if not words or (whole and len(words) > limit):
        return None
    first = words[0].start() if whole else words[max(0, len(words) - limit)].start()
    window = area[first:].rstrip(_MARKUP + " \t,")
    start = _long_start(short, window)
    if start is None:
        return None
    long = window[start:].strip(_MARKUP + " \t")
    long_words = _WORD.findall(long)
    if len(long_words) < 2 or len(long) <= len(short) or short.casefold() in long.casefold():
        return None
    long_at = area_at + first + start + (len(window[start:]) - len(window[start:].lstrip(_MARKUP + " \t")))
    return Definition(
        Hit(short_at, short_at + len(short), short, UNKNOWN_LABEL),
        Hit(long_at, long_at + len(long), text[long_at : long_at + len(long)], UNKNOWN_LABEL),
    )


def _long_start(short: str, window: str) -> int | None:
    """Where the long form starts in `window`: each of the short form's letters and digits,
    right to left, found in order from the window's end; the first one opening a word."""
    letters = [c.casefold() for c in short if c.isalnum()]
    at = len(window) - 1
    for i in range(len(letters) - 1, -1, -1):
        while at >= 0 and (window[at].casefold() != letters[i] or (i == 0 and at > 0 and window[at - 1].isalnum())):
            at -= 1
        if at < 0:
            return None
        at -= 1
    return at + 1


def abbreviation_hits(text: str, found: Sequence[Hit]) -> tuple[list[Hit], list[Definition]]:
    """The hits with each defined abbreviation's long form in place of the pieces of it found
    ("Denial" of "Denial of service"), and its short form where nothing was found; and the
    definitions, whose two forms typing labels alike."""
    pairs = definitions(text)
    if not pairs:
        return list(found), []
    kept = [h for h in found if not any(p.long.start <= h.start and h.end <= p.long.end for p in pairs)]
    for p in pairs:
        for hit in (p.long, p.short):
            if not any(h.start < hit.end and hit.start < h.end for h in kept):
                kept.append(hit)
    return sorted(kept, key=lambda h: h.start), pairs
