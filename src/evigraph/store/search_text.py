"""The form text takes in full-text search, on every store: what the indexes see and queries are put in.

Shared by the embedded engine's full-text indexes, the in-process BM25 index (`bm25.py`) and
FalkorDB's code indexes, so a word is spelled alike wherever it is indexed or looked up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_DIGIT_LETTERS = str.maketrans("0123456789", "bcdfghklmn")


def fts_text(text: str) -> str:
    """The text the full-text index sees, and the form queries are put in.

    The engine's tokenizer splits on spaces only (a word after a line break or `#` is glued to
    its neighbour) and drops every token holding a digit (years, model numbers). So punctuation
    and line breaks become spaces, and a token with digits is spelled with consonants behind a
    `qx` marker ("1915" -> "qxcnch"), which no stemmer rule touches.
    """
    return " ".join(_spelled(token) for token in _NON_WORD.sub(" ", text).lower().split())


def entity_search_text(name: str, aliases: Sequence[str], descriptions: Sequence[str]) -> str:
    """What full-text search over an entity matches, on every store: every name form and the
    descriptions."""
    return fts_text(" ".join(dict.fromkeys([name, *aliases, *descriptions])))


def _spelled(token: str) -> str:
    if token.isalpha():  # most tokens: nothing to check character by character
        return token
    return "qx" + token.translate(_DIGIT_LETTERS) if any(ch.isdigit() for ch in token) else token
