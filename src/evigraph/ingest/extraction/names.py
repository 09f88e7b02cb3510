"""The one name filter every built-in extractor applies: is this span a name, and where exactly?

Offline extractors see raw chunk text, and documentation is full of things that look like names
to a statistical model or a capitalisation rule but identify nothing a reader would look up:
markdown markup, table rows, URLs, file paths, code and version numbers. Each becomes a junk
entity that fills answers and links unrelated passages. The filter works in two steps, so that
a real name wrapped in markup is kept rather than lost:

1. `trim_span` narrows a span to its name by peeling markup off the edges (`**Docker**` ->
   `Docker`, `## Install Kuzu` -> `Install Kuzu`, `- Paris` -> `Paris`, `<b>Oslo</b>` -> `Oslo`,
   a leading "the").
2. `is_name` then refuses what remains only when nothing name-like is left (`junk_reason` says why,
   which the tests and measurements use).

Deliberate choices about real names:
- Dots are allowed when a capital is next to them: "U.S.", "Node.js", "St. Louis", "ASP.NET"
  are names; dots between lower-case words ("os.path", "index.html", "e.g.") are code, a file or
  an abbreviation, never a name.
- "C++", "C#", "F#" keep their trailing symbols: "+" and a trailing "#" are never stripped, and a
  "#" is only a heading marker at the start of a span.
- Digits inside a name are fine ("Python 3", "Windows 11", "Boeing 747"); a span with no letter at
  all is a number, date or version, kept only when the extractor typed it as a date or amount.
- Letters are Unicode letters, so non-Latin names ("東京", "Москва", "محمد") pass unchanged.
"""

from __future__ import annotations

import re

EDGE_JUNK = " \t\r\n\"'`“”‘’,;:!?()[]{}*_~|\u00a0"
"""Characters never at the edge of a name: quotes, brackets, and markdown emphasis, code and table
markers. "." is not here ("Inc.", "U.S." end with one), nor "+" or "#" ("C++", "C#")."""

_LEADING = re.compile(
    r"(?:"
    r"#{1,6}(?=\s|$)"  # ATX heading marker
    r"|(?:[-*+•]|\d{1,9}[.)])(?=\s)"  # list item marker: "- x", "* x", "+ x", "1. x", "2) x"
    r"|>+(?=\s)"  # block quote marker
    r"|<[A-Za-z/][^<>]*>"  # an HTML tag in front of the name
    r"|&#?\w+;"  # an HTML entity such as "&nbsp;"
    r"|the\s+"  # "the United States" and "United States" are one entity
    r")",
    re.I,
)
_TRAILING_TAG = re.compile(r"</?[A-Za-z][^<>]*>$")
_LINK_TAIL = re.compile(r"\]\(")  # "[Docker](https://..." : the name ends where the link target starts

_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|\bwww\.|\bmailto:)", re.I)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_PATH = re.compile(
    r"(?:^(?:~|\.{1,2})?/|\\|/\S*/|^[A-Za-z]:[\\/]"
    r"|(?<![\w/])[a-z0-9_.-]{2,}/[a-z0-9_.-]{2,})"  # "src/app", but not "km/h", "TCP/IP" or "AC/DC"
)
_FILE = re.compile(
    r"\.(?:md|rst|txt|py|pyi|ipynb|json|ya?ml|toml|ini|cfg|conf|lock|html?|css|csv|tsv|xml|sh|bat|ps1|exe"
    r"|dll|so|whl|zip|gz|tar|pdf|png|jpe?g|gif|svg|log|db|sql|java|go|rs|cpp|hpp|h|c|ts|tsx|jsx)$"
)  # case-sensitive: "Washington D.C" is not a C file
_LOWER_DOTTED = re.compile(r"(?<![\w.])(?:[a-z_][a-z0-9_]+\.[a-z_]|[a-z_]\.[a-z_][a-z0-9_])")
"""Dotted lower-case words, one of them longer than a letter: "os.path", "index.js", "compete.f"."""
_LOWER_ABBREVIATION = re.compile(r"(?<![\w.])(?:[a-z]\.){2,}")
""""e.g.", "i.e.", "a.m.": not code, and a name only inside a time ("10 a.m.")."""
_CODE = re.compile(r"\(\)|[_=;{}<>`\\\[\]]|\$(?=[A-Za-z{(])|->|=>|::|\*\*")
_HTML_ENTITY = re.compile(r"&#?\w+;")
_LETTER = re.compile(r"[^\W\d_]")
_VERSION = re.compile(r"^v\d+(?:\.\d+)*")
_ARTICLES = frozenset({"the", "a", "an"})
_RULE_LINE = re.compile(r"^[\s\-=*_~#|:]*$")


def trim_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Narrow `text[start:end]` to the name it holds by peeling markup off both edges, or None if empty.

    Peeling repeats until nothing changes, because markup nests: `- **[Docker](` has a list
    marker, emphasis and a link bracket in front of the name.
    """
    while True:
        before = (start, end)
        while start < end and text[start] in EDGE_JUNK:
            start += 1
        while end > start and text[end - 1] in EDGE_JUNK:
            end -= 1
        m = _LEADING.match(text, start, end)
        if m is not None and m.end() < end:
            start = m.end()
        link = _LINK_TAIL.search(text, start, end)
        if link is not None and link.start() > start:
            end = link.start()
        t = _TRAILING_TAG.search(text, start, end)
        if t is not None and t.start() > start:
            end = t.start()
        if (start, end) == before:
            break
    return (start, end) if end > start else None


def junk_reason(name: str, *, numeric_ok: bool = False) -> str | None:
    """Why `name` (already trimmed) is not a name, or None when it is one.

    `numeric_ok` is for spans the extractor typed as a date, time or amount: "1998" and "40%" are
    legitimate entities there, while an untyped or name-typed "3.11" is a version string.
    """
    if "\n" in name:
        lines = [line.strip() for line in name.split("\n")]
        # A wrapped line inside a paragraph is still one name ("Barack\nObama"); a blank line or a
        # line opening with markup means the span ran from one block (a heading, a row) into the next.
        if any(not line or _LEADING.match(line) or line[0] in "#|>`-*+" for line in lines[1:]):
            return "crosses a block"
    if _URL.search(name):
        return "url"
    if _EMAIL.search(name):
        return "e-mail"
    if "|" in name or _RULE_LINE.match(name):
        return "table or rule line"
    if not _LETTER.search(name):
        return None if numeric_ok and any(c.isdigit() for c in name) else "number"
    if _PATH.search(name):
        return "path"
    if _FILE.search(name):
        return "file name"
    if _HTML_ENTITY.search(name):
        return "markup"
    if _CODE.search(name):
        return "code or markup"
    if _LOWER_DOTTED.search(name):
        return "code or dotted identifier"
    if not numeric_ok and _LOWER_ABBREVIATION.search(name):
        return "abbreviation"
    if _VERSION.match(name):
        return "version"
    if len(name.strip()) < 2:
        return "too short"
    if name.casefold() in _ARTICLES:
        return "article"  # the small model sometimes tags a bare "the" (seen in package READMEs)
    return None


def is_name(name: str, *, numeric_ok: bool = False) -> bool:
    """Whether a trimmed span names something; see `junk_reason`."""
    return junk_reason(name, numeric_ok=numeric_ok) is None


def clean_name_span(text: str, start: int, end: int, *, numeric_ok: bool = False) -> tuple[int, int] | None:
    """The span of the name inside `text[start:end]`, or None when no name is there.

    The one entry point extractors call: trim the edges, then judge what is left.
    """
    span = trim_span(text, start, end)
    if span is None or not is_name(text[span[0] : span[1]], numeric_ok=numeric_ok):
        return None
    if _inside_token(text, span[0], span[1]):
        return None
    return span


def _inside_token(text: str, start: int, end: int) -> bool:
    """Whether the span is a piece of a larger code-like token, judged by the characters around it.

    A regex or a model may cut "Image" out of `Docker_Image`, "README" out of `README.md` or
    "FastAPI" out of `FastAPI()`: the piece alone passes every test, its surroundings show it is code.
    """
    before = text[start - 1] if start > 0 else " "
    after = text[end : end + 2]
    if before in "_/\\@" or after[:1] in ("_", "/", "\\", "@") or after == "()":
        return True
    dotted_before = before == "." and start > 1 and text[start - 2].isalnum()
    dotted_after = after[:1] == "." and after[1:].isalnum()
    return dotted_before or dotted_after
