"""How search reads words: casefolded, accents dropped, English plurals folded, the same for a
store's term counts, its BM25 index and the questions asked of them."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_WORD = re.compile(r"\w+", re.UNICODE)


def passage_terms(text: str) -> set[str]:
    """The terms `term_counts` counts: casefolded words with English plural endings folded.

    A store counts a passage's title, section path and text this way, and callers read questions
    and passages the same way, so the counts and what callers look up agree whatever a store's
    full-text engine does inside. The folding only needs to give a word and its plural one key
    ("films" and "film", "movies" and "movie", "boxes" and "box"); a real stemmer would also join
    words of different meaning ("university" and "universe"). Accents are dropped, as questions
    are often typed without them ("Beyonce" for "Beyoncé").
    """
    return {_fold(w) for w in set(_WORD.findall(_unaccented(text.casefold())))}


def passage_words(text: str) -> list[str]:
    """Every word of `text` folded as `passage_terms` folds it, in order, repeats kept."""
    return [_fold(w) for w in _WORD.findall(_unaccented(text.casefold()))]


def _unaccented(text: str) -> str:
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def searchable_text(title: str, breadcrumbs: Sequence[str], text: str, context: str = "") -> str:
    """A passage as search reads it: its document's title, its section path, its context (a
    contextual chunker's sentence, `TextChunk.context`), then its text."""
    return " ".join((title, *breadcrumbs, context, text) if context else (title, *breadcrumbs, text))


def _fold(word: str) -> str:
    if len(word) <= 3:
        return word
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ie"):
        word = word[:-2] + "y"
    return word[:-1] if word.endswith("e") and len(word) > 3 else word
