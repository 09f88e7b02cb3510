"""Names from the outside world (file names, document keys, titles) shown on one line.

A file name may hold a newline, a carriage return, terminal escapes, bidi overrides or, read
from a non-UTF-8 folder, lone surrogates. Printed raw, it forges a line of a report ("ingested
..."), or a numbered evidence line an agent would cite, rewrites the terminal, or fails to
encode. Every report renders such text through here.
"""

from __future__ import annotations

import unicodedata

# Controls (newline, escape), format characters (bidi overrides, zero-width), surrogates and
# line or paragraph separators. Other unusual characters (a no-break space) stay readable.
_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_QUOTES = ("'", '"')


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE


def display_name(name: str) -> str:
    """`name` as is when it is safe on one line, else quoted and escaped as Python's `repr`.

    A name that itself starts with a quote is quoted too, so a quoted display always means
    escaped text and two different names never look the same.
    """
    if not name.startswith(_QUOTES) and (name.isprintable() or not any(_unsafe(ch) for ch in name)):
        return name
    return repr(name)


def display_text(text: str) -> str:
    """Free text (an error message, a passage's label) on one line: unsafe characters escaped, no quotes."""
    if text.isprintable():  # the common case, and it implies nothing unsafe
        return text
    return "".join(repr(ch)[1:-1] if _unsafe(ch) else ch for ch in text)


def one_line(text: str) -> str:
    """Free text folded onto one line (runs of whitespace, line breaks included, become one space),
    then escaped: an entity name or description an agent recorded cannot start a forged [n] line."""
    return display_text(" ".join(text.split()))
