"""What a batch's texts say about how words are written: in code, in lower case, as names.

Typing (`entity_types`) judges a name by how the documents write its words: a word written in
lower case in prose is a common word, one capitalised mid-sentence is written as a name, an
identifier in a fenced block or backticks is code, a package imported or installed is software.
These cues are read once per batch, over every text, so a name is judged by all its documents.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evigraph.store.terms import passage_words

_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.M)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w, \t()]+)|import[ \t]+([\w., \t]+))", re.M)
_INSTALL = re.compile(r"\b(?:pip|pip3|uv pip|poetry|npm|yarn|cargo|gem|go)[ \t]+(?:install|add|get)[ \t]+([^\n`]+)")
STRINGS = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|(?:^|\s)(?:#|//)[^\n]*|<!--.*?-->", re.S)
"""String literals and comments: prose inside code ("Hello, world!"), not identifiers."""
_PACKAGE = re.compile(r"[A-Za-z][\w.\-]*")
WORD = re.compile(r"[^\W\d_][\w'’\-]*")
BREAK = re.compile(r"[.!?:;()\[\]\"“”]")
"""Between two words: a sentence or clause may start after it, so the capital says nothing."""
URL_SPAN = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)[^\s)>\]\"'`]+", re.I)
"""An address in the text: capitals inside it ("...list=PLJtp8Jm8EDzjgVg") are no names."""
_SHELLS = frozenset({"bash", "sh", "shell", "console", "shell-session", "zsh", "powershell", "ps1", "bat", "cmd"})
TAG = re.compile(r"<[^>\n]*>")
_LINK_TEXT = re.compile(r"\[([^\]\n]{2,200})\](?=[(\[])")


_REF_MARKUP = re.compile(
    r"^[ \t]{0,3}\[[^\]\n]+\]:[^\n]*|\]\[[^\]\n]*\]|[\w./-]*\.(?:png|jpe?g|gif|svg|css|js)\b", re.M
)
"""Reference-link ids and definitions (`[Heroku][heroku]`, `[heroku]: https://...`) and file names
(`3-garfo.png`): markup, whose lower case says nothing about how the prose writes a word."""


def _markup_blanked(prose: str) -> str:
    """The prose a reader reads: inline code, addresses, reference ids and file names out, HTML
    tags as sentence breaks."""
    return TAG.sub(". ", _REF_MARKUP.sub(" ", URL_SPAN.sub(" ", _INLINE_CODE.sub(" ", prose))))


@functools.cache
def lexicon() -> frozenset[str]:
    """English words: the whole lower-case words of the WordPiece vocabulary shipped with the
    bundled MiniLM model (21,945 of its 30,522 entries; Apache-2.0, no download, 15 ms to read),
    and WordNet's words when a spaCy model is installed (`spacy_models.model_words`).

    The vocabulary was built from the words frequent in English books and Wikipedia, so it holds
    "fixed", "support", "cache", "schedule" but not "starlette", "uvicorn", "httpx". It also holds
    frequent names ("paris", "google", "tom"), which is why it only judges names the model did not
    type and the documents never write mid-sentence (`Cues.lexical`).
    """
    from evigraph.ingest.extraction.spacy_models import model_words
    from evigraph.providers.embedders.minilm import MODEL_DIR

    try:
        vocab = json.loads((MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, ValueError, KeyError):  # a trimmed install: the documents' own cues still work
        vocab = {}
    return frozenset(w for w in vocab if w.isalpha() and w.islower()) | model_words()


@dataclass(frozen=True)
class Cues:
    """What a batch's texts say about how words are written."""

    code: frozenset[str]
    """Identifiers written as code: in a fenced block, in backticks, imported."""
    packages: frozenset[str]
    """Casefolded names imported or installed (`import httpx`, `pip install uvicorn`)."""
    lower: frozenset[str]
    """Words written in lower case in prose."""
    capitalised: frozenset[str]
    """Words capitalised in the middle of a sentence in prose (`NAME_RATIO`): written as names."""
    technical: bool = False
    """Whether the documents hold code: software documentation, where acronyms, header-like and
    versioned names (`JSON`, `Content-Type`, `HTTP/2`) are technologies, not the organisations a
    news-trained model takes them for."""

    @classmethod
    def of(cls, texts: Iterable[str]) -> Cues:
        return cls.from_split(split_code(text) for text in texts)

    @classmethod
    def from_split(cls, split: Iterable[tuple[str, list[str]]]) -> Cues:
        """From each text's prose and fenced blocks (`split_code`), split once for typing too."""
        code: set[str] = set()
        packages: set[str] = set()
        lower: Counter[str] = Counter()
        capitalised: Counter[str] = Counter()
        for prose, blocks in split:
            for block in blocks:
                code.update(IDENTIFIER.findall(STRINGS.sub(" ", block)))
                _add_packages(block, packages)
                _add_commands(block, packages)
            for inline in _INLINE_CODE.findall(prose):
                code.update(IDENTIFIER.findall(STRINGS.sub(" ", inline)))
            _add_packages(prose, packages)
            _add_words(_markup_blanked(prose), lower, capitalised)
        folded: Counter[str] = Counter()
        for word, n in lower.items():  # each distinct word folded once
            folded[fold_word(word)] += n
        names = frozenset(w for w, n in capitalised.items() if n * NAME_RATIO >= folded[fold_word(w)])
        return cls(frozenset(code), frozenset(packages), frozenset(folded), names, technical=bool(code))

    def in_code(self, name: str) -> bool:
        return name in self.code or name.casefold() in self.packages

    def written_lower(self, word: str) -> bool:
        return fold_word(word) in self.lower

    def lexical(self, word: str) -> bool:
        """A word of the English lexicon the documents never write mid-sentence: "Fixed" heading a
        changelog section, "Support" opening a list item."""
        return word not in self.capitalised and in_lexicon(word)

    def common(self, word: str) -> bool:
        """A word written in lower case in prose and never capitalised mid-sentence: not a name.
        Plurals fold ("Responses" in a heading, "response" in prose)."""
        return fold_word(word) in self.lower and word not in self.capitalised


@functools.lru_cache(maxsize=1 << 16)
def in_lexicon(word: str) -> bool:
    """Whether the word, in any case, is one of the English `lexicon` ("We'll" by "we"). Kept
    for the words asked last, as `fold_word` is."""
    words = lexicon()
    stem = re.split(r"['’]", word, maxsplit=1)[0]  # "We'll", "Don't"
    return stem.casefold() in words or fold_word(stem) in words


_ENDINGS = ("r", "er", "d", "ed", "ing", "ly", "able", "ability", "ness", "ment", "ize", "ise")
"""Inflections and derivations a coined-looking word may be an English word under ("serializer":
serialize + r; "caching": cache; "formatter": format)."""


@functools.lru_cache(maxsize=1 << 16)
def coined(word: str) -> bool:
    """Whether a word is no English word under any ending, nor a plural: "pytest", "docopt",
    "colorama", "stdin". Software docs write a tool's or a project's name in lower case ("modern pytest",
    "if colorama is installed"), so lower case alone does not make such a word common."""
    folded = word.casefold()
    if not word.isalpha() or in_lexicon(word) or (folded.endswith("s") and not folded.endswith("ss")):
        return False  # a plural ("backends", "gotchas") is a common noun's: names take none
    words = lexicon()
    for end in _ENDINGS:
        stem = folded[: -len(end)]
        if not folded.endswith(end) or len(stem) < 3:
            continue
        if stem in words or stem + "e" in words or (stem[-1] == stem[-2] and stem[:-1] in words):
            return False  # "serializer(s)", "cach(e)ing", "format(t)er"
    return True


@functools.lru_cache(maxsize=1 << 16)
def fold_word(word: str) -> str:
    """A word as search folds it: case, accents and English plurals (`terms.passage_words`).

    Kept for the words asked last: typing a batch asks about each distinct word and each name
    again and again (157,000 calls for 3,000 passages), of a vocabulary that recurs."""
    folded = passage_words(word)
    return folded[0] if len(folded) == 1 else word.casefold()


def split_code(text: str) -> tuple[str, list[str]]:
    """The prose of `text` (fenced blocks blanked, offsets kept) and the fenced blocks' texts."""
    fences = [m.start() for m in _FENCE.finditer(text)]
    if not fences:
        return text, []
    blocks: list[str] = []
    prose = list(text)
    bounds = [*fences, len(text)] if len(fences) % 2 else fences  # an unclosed fence runs to the end
    for start, end in zip(bounds[::2], bounds[1::2], strict=False):
        blocks.append(text[start:end])
        prose[start:end] = " " * (end - start)
    return "".join(prose), blocks


def _add_commands(block: str, packages: set[str]) -> None:
    """Programs run in a shell block (```shell, or lines prompted by `$`): `python -m`, `uvicorn
    main:app`. A name the documents run is a technology, whatever case the prose gives it."""
    first, _, body = block.partition("\n")
    shell = first.strip("`~ \t").casefold() in _SHELLS
    for line in body.splitlines():
        line = line.strip()
        if line.startswith(("$ ", "> ", "% ")):
            line = line[2:]
        elif not shell:
            continue
        m = _PACKAGE.match(line)
        if m:
            packages.add(m.group().casefold())


def _add_packages(text: str, packages: set[str]) -> None:
    for m in _IMPORT.finditer(text):
        modules = m.group(1) or m.group(3)  # `from a.b import c`, `import a.b, d`: the packages a and d
        packages.update(part.split(".")[0].casefold() for part in re.split(r"[\s,]+", modules) if part)
    for m in _INSTALL.finditer(text):
        packages.update(p.casefold().split("[")[0] for p in _PACKAGE.findall(m.group(1)) if not p.startswith("-"))


def _add_words(prose: str, lower: Counter[str], capitalised: Counter[str]) -> None:
    """Lower-case words, and words capitalised where the position does not force it: not the first
    word of a line, list item or sentence, nor any word of a heading or a title-case line."""
    for line in prose.splitlines():
        stripped = line.lstrip(" \t>*-+|0123456789.)")
        words = list(WORD.finditer(stripped))
        lower.update(m.group() for m in words if m.group().islower())
        if stripped.startswith("#") or title_case(stripped, words) or shouting(stripped, words):
            continue
        stripped = _LINK_TEXT.sub(_untitled, stripped)  # "* [Full Text Search in Django][...]": a title
        words = list(WORD.finditer(stripped))
        for before, m in itertools.pairwise(words):
            if m.group()[0].isupper() and not BREAK.search(stripped, before.end(), m.start()):
                capitalised[m.group()] += 1  # inside a sentence: written as a name


NAME_RATIO = 4
"""A word counts as written as a name when it is capitalised mid-sentence at least a quarter as
often as it is written in lower case: title-like runs capitalise common words mid-line ("Async
Support", "Static Files, Streaming responses"), and "support" in lower case fifty times over says
what the word is."""


def _untitled(m: re.Match[str]) -> str:
    """A link's text blanked when it reads as a title, so its capitals count as no names."""
    words = list(WORD.finditer(m.group(1)))
    return " " * len(m.group()) if len(words) >= 4 and title_case(m.group(1), words) else m.group()


TITLE_WORDS = 12
"""Titles are short; a longer line is prose, however many names it holds ("A B met C D. ...")."""


def title_case(line: str, words: Sequence[re.Match[str]]) -> bool:
    """A short line with no sentence's full stop, its every longer word capitalised: a title ("Add
    HTTP/2 Support", "Bug Fixes & Maintenance"), where capitals say nothing. "Alice Walker met Ada
    in Paris." is a sentence."""
    if not 2 <= len(words) <= TITLE_WORDS or line.rstrip().endswith((".", "!", "?")):
        return False
    long = [m.group() for m in words if len(m.group()) >= 4 and m.group() not in TITLE_LOWER]
    return bool(long) and all(w[0].isupper() for w in long)


TITLE_LOWER = frozenset({"with", "from", "into", "onto", "over", "than", "that", "upon", "your", "when", "what"})
"""Longer function words titles leave in lower case ("Full Text Search in Django with Database
Backends")."""


def shouting(line: str, words: Sequence[re.Match[str]]) -> bool:
    """A line in capitals: a licence's "THE SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND ..."."""
    if len(words) < 3:
        return False
    letters = "".join(filter(str.isalpha, line))  # counted in C: a paragraph is one line
    return sum(map(str.isupper, letters)) >= 0.8 * len(letters)
