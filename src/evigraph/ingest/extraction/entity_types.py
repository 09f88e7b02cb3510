"""Entity typing without a model: what the documents themselves say about a name decides its label.

A statistical NER model trained on news types by the shape of a sentence, so technical docs get
nonsense: on the Starlette docs 7 of 70 Person entities were people, `Starlette`, `Config` and
`Request` were Person, `GraphQL` a Location, `127.0.0.1` a Date, and the Technology label held
nothing. The documents carry better evidence than the model's guess, and it costs no download:

- **Code.** A name the documents write as code (in a fenced block or in backticks), import,
  install or run in a shell is a software thing: Technology. `TestClient`, `Response`, `uvicorn`.
  So is a PascalCase name, and in software docs an acronym or a header-like or versioned shape
  (`JSON`, `Content-Type`, `HTTP/2`). Names in backticks and projects linked to a code host or a
  package index become entities even where the model saw none.
- **How a word is written.** A real name is capitalised inside a sentence; a common word is
  capitalised only where every word is (a heading, a title, a sentence start) and written in lower
  case elsewhere. So "Method", "Exception", "Path Parameters" in a heading are no entities, while
  "Apple" in "he joined Apple in 1990" stays one, even where "apple" is also a fruit. A name the
  model did not type is also checked against an English lexicon (`word_cues.lexicon`), as a
  changelog's "Fixed" or "Support" is never written in lower case in it. These cues are read
  once per batch (`word_cues.Cues`).
- **Markup.** Links, headings over a repository link and versions say what a name is
  (`structure`): a sponsor list's sites are organisations, "Python 3.12" is software.
- **Shape.** CSS values, colours, addresses, bare versions, code fragments are no names at all
  (`names.junk_reason` refuses most; the rest need the batch's cues, `name_junk` here).

The model's tag is then one vote among these: it decides only what the documents leave open
(a person, a city), and a person's name must read as one (no common word, no acronym). What
fits nothing stays `UNKNOWN_LABEL`. Measured by bench/entities.py (README: Typing without an LLM).

Everything is judged per batch of documents an extractor call handles, over every hit of a name,
so a name gets one label across those documents.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from evigraph.ingest.extraction.abbreviations import abbreviation_hits
from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.labels import TAG_CANDIDATES, map_candidates
from evigraph.ingest.extraction.structure import (
    LinkLabels,
    code_hits,
    codename_hits,
    defined_classes,
    definitions_of,
    heading_hits,
    link_hits,
    reference_hits,
    shaped_hits,
    title_links,
    with_versions,
)
from evigraph.ingest.extraction.word_cues import (
    BREAK,
    TAG,
    URL_SPAN,
    WORD,
    Cues,
    coined,
    fold_word,
    in_lexicon,
    shouting,
    split_code,
    title_case,
)
from evigraph.models import UNKNOWN_LABEL, Ontology, TextChunk, normalize_name

TECHNOLOGY_CANDIDATES: tuple[str, ...] = (
    "Technology",
    "Software",
    "Library",
    "Framework",
    "Tool",
    "Technique",
    "Product",
)
"""Ontology labels that can hold what the documents' cues make a technology, most fitting first."""

NEUTRAL_CANDIDATES: tuple[str, ...] = ("Concept",)
"""The label of a name whose model votes disagree, when the ontology declares it."""

_PASCAL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$|^[A-Z]{2,}[a-z][A-Za-z0-9]*$")
"""One token capitalised inside: `GraphQL`, `HTMLResponse`, `WebSocket`, `SQLAlchemy`."""
_NAME_PREFIX = re.compile(r"^(?:Mc|Mac|De|Di|Da|Du|La|Le|Van|Von|O')[A-Z]")
"""Capitals inside a person's or place's name: McDonald, DeVito, LeBron, O'Brien."""
_CSS = re.compile(r"\b\d+(?:\.\d+)?(?:px|rem|em|pt|vh|vw|ch|ex|deg|ms|fr)\b")
_HEX = re.compile(r"^#?(?:[0-9a-f]{3}|[0-9a-f]{6}|[0-9a-f]{8}|[0-9A-F]{6})$")
_ADDRESS = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$|^[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}$", re.I)
_TRAILING_VERSION = re.compile(r"\s+v?\d+(?:\.\d+)*[a-z]?\d*\+?$")
"""A version after a name: "Python 3.6", "Django 1.8", "Starlette v0.6.3" are the named thing."""
_TECH_SHAPE = re.compile(
    r"^[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)+$"  # Content-Type, X-Forwarded-Proto, WWW-Authenticate
    r"|^(?=[^ ]*\d)(?=[^ ]*[A-Z])[A-Za-z][A-Za-z0-9./+-]*$"  # HTTP/2, UTF-8, SOCKS5, MSYS2
)
_BARE_VERSION = re.compile(r"^v?\d+(?:\.\d+)+\+$|^v?\d+\.\d+\.\d{1,3}(?:\.\d+)?$")
"""A version alone: "5.1+", "2.7.0"; "12.03.2004" is a date."""
_DIGIT = re.compile(r"\d")
_SCRIPT = re.compile(r"<(script|style)\b.*?(?:</\1\s*>|$)", re.S | re.I)
"""A script or style element inlined in the docs: code, whatever its words."""
_STANDARD = re.compile(r"^[A-Z]{2,6}[ -]?\d{4,5}$")
_DURATION = re.compile(r"\b(?:milli)?(?:seconds?|minutes?|hours?|days?|weeks?|ms)$", re.I)
_NUMBERED = re.compile(r"^\d{1,3}[.)]\s")
_CODE_PUNCTUATION = re.compile(r"\w\(|[()]")


@dataclass(frozen=True)
class Kinds:
    """The ontology's labels for the kinds typing decides, looked up once per batch."""

    technology: str
    person: str
    organisation: str
    neutral: str
    product: str = UNKNOWN_LABEL
    date: str = UNKNOWN_LABEL
    standard: str = UNKNOWN_LABEL
    event: str = UNKNOWN_LABEL

    @classmethod
    def of(cls, ontology: Ontology) -> Kinds:
        return cls(
            technology=map_candidates(TECHNOLOGY_CANDIDATES, ontology),
            person=map_candidates(TAG_CANDIDATES["PERSON"], ontology),
            organisation=map_candidates(TAG_CANDIDATES["ORG"], ontology),
            neutral=map_candidates(NEUTRAL_CANDIDATES, ontology),
            product=map_candidates(TAG_CANDIDATES["PRODUCT"], ontology),
            date=map_candidates(TAG_CANDIDATES["DATE"], ontology),
            standard=map_candidates(TAG_CANDIDATES["LAW"], ontology),
            event=map_candidates(TAG_CANDIDATES["EVENT"], ontology),
        )

    def links(self) -> LinkLabels:
        return LinkLabels(project=self.technology, account=self.person, service=self.product, owner=self.organisation)


def name_junk(name: str, cues: Cues) -> bool:
    """Whether a name the model or the rules found is no entity, given how the batch writes words."""
    if _CODE_PUNCTUATION.search(name) and not _balanced(name):
        return True  # "dispatch(self", "CustomMiddleware(BaseHTTPMiddleware"
    if _CODE_PUNCTUATION.search(name.replace(" (", " ")):
        return True  # "Request(scope)": a call, not a name
    if _CSS.search(name) or _HEX.match(name) or _ADDRESS.match(name):
        return True
    letters = [c for c in name if c.isalpha()]
    if not letters:  # "5.1+", "2.7.0", "$50,000": versions and money; dates stay
        return bool(_BARE_VERSION.match(name)) or any(c in "$€£¥" for c in name)
    if letters and not any(c.isupper() or c.isdigit() for c in name):
        # "exc", "release-notes" are junk; "uvicorn" is installed, "pytest" is no English word
        return name.casefold() not in cues.packages and not coined(name)
    words = name.split()
    if len(words) == 1 and not _PASCAL.match(name) and not name.isupper():
        return cues.common(name) and not cues.in_code(name) and not coined(name)  # "Method", "Exception", "Drop"
    return False


def trim_common_lead(hit: Hit, cues: Cues, structural: bool = False) -> Hit:
    """The hit without the common words capitalised only because they open a line or sentence:
    "Deprecate WSGIMiddleware", "Drop NPN" in release notes name WSGIMiddleware and NPN.

    A word the documents write in lower case goes whatever follows; a word only the lexicon knows
    goes only from a hit the model did not type, on a line whose capitals say nothing
    (`capitals_forced`), and before a name that cannot be a common word (an acronym, PascalCase,
    code), as the lexicon also holds first names ("Chris Heisel")."""
    words = list(WORD.finditer(hit.name))
    cut = 0
    while (
        cut < len(words) - 1
        and words[cut].group()[0].isupper()
        and cues.common(words[cut].group())
        and not _DIGIT.search(hit.name, words[cut].end(), words[cut + 1].start())
    ):  # a word before a number is a month or a unit: "May 12th, 2020"
        cut += 1
    lexical = structural and hit.label == UNKNOWN_LABEL
    if cut == 0 and lexical and len(words) > 1 and cues.lexical(words[0].group()):
        rest = hit.name[words[1].start() :]
        if _acronym(rest) or _PASCAL.match(rest) or cues.in_code(rest):
            cut = 1
    if cut == 0:
        return hit
    while cut < len(words) - 1 and words[cut].group().islower():
        cut += 1  # "Support for Python": the words between go with the common word
    offset = words[cut].start()
    return Hit(hit.start + offset, hit.end, hit.name[offset:], hit.label)


_JOINED = re.compile(r"[ \t]+&[ \t]+")


def split_joined(hit: Hit) -> list[Hit]:
    """The names a hit joins with "&" when each side is a name of several words: "AWS Lambda &
    API Gateway" is two services. One word a side is one name ("Procter & Gamble", "Johnson &
    Johnson")."""
    cut = _JOINED.search(hit.name)
    if cut is None:
        return [hit]
    left, right = hit.name[: cut.start()], hit.name[cut.end() :]
    if _JOINED.search(right) or len(left.split()) < 2 or len(right.split()) < 2:
        return [hit]
    return [
        Hit(hit.start, hit.start + cut.start(), left, hit.label),
        Hit(hit.start + cut.end(), hit.end, right, hit.label),
    ]


def _common_test(hit: Hit, cues: Cues, structural: bool) -> Callable[[str], bool]:
    if hit.label != UNKNOWN_LABEL or not structural:
        return cues.common  # typed by the model, or in a sentence: a name unless the documents say otherwise
    return lambda word: cues.common(word) or cues.lexical(word)


def capitals_forced(text: str, hit: Hit) -> bool:
    """Whether the hit's line is one where every word may be capitalised: a heading, a list item,
    a table row or quote, a title, or a line in capitals (a licence's "THE SOFTWARE IS PROVIDED").
    There, and only there, the lexicon judges a word the model did not type: a sentence's first
    word ("Paris met Alice in Berlin.") keeps the benefit of the doubt, as the rules already
    dropped the common words that open sentences (`rules._looks_common`)."""
    return _forced_line(_line_of(text, hit))


@functools.lru_cache(maxsize=1024)
def _forced_line(line: str) -> bool:
    """`capitals_forced` of one line, which every hit on it asks: a paragraph is one line, and
    reading it once per hit made typing quadratic in the paragraph's names."""
    if line[:1] in ("#", "-", "*", "+", ">", "|") or _NUMBERED.match(line):
        return True
    words = list(WORD.finditer(line))
    return shouting(line, words) or title_case(line, words)


def _line_of(text: str, hit: Hit) -> str:
    start = text.rfind("\n", 0, hit.start) + 1
    end = text.find("\n", hit.end)
    return text[start : len(text) if end < 0 else end].strip()


LONGEST_ACRONYM = 5
"""Acronyms are short ("HTTP", "ASGI", "POSIX"); a longer word in capitals on a shouting line is a
word shouted."""


def shouted_words(text: str, hit: Hit) -> bool:
    """Whether the hit is English words in capitals on a line in capitals ("LOSS OF USE"): a
    news-trained model tags such words as names, as capitals are all it reads there, and they
    say nothing on that line. The hit's own words are judged first: most hits are not capitals."""
    words = WORD.findall(hit.name)
    if not words or not all(w.isupper() and (in_lexicon(w) or len(w) > LONGEST_ACRONYM) for w in words):
        return False  # "INCIDENTAL", "DISCLAIMED": too long for an acronym, whatever the lexicon holds
    line = _line_of(text, hit)
    return shouting(line, list(WORD.finditer(line)))


def all_common(hit: Hit, cues: Cues, structural: bool = False) -> bool:
    """Whether every word of the hit is a common word ("Path Parameters", "Getting Started",
    "Bug Fixes & Maintenance", an untyped "Fixed"): a heading or a phrase, not a name. A real name
    has a word the documents write as one ("the United States"), or one they never write in lower
    case; PascalCase and acronyms are never common."""
    if any(c.isdigit() for c in hit.name):
        return False  # a date, an amount, a versioned name: no phrase of common words
    words = WORD.findall(hit.name)
    if len(words) == 1 and coined(words[0]):
        return False  # "Docopt" opening a sentence, "docopt" in the others: a name
    common = _common_test(hit, cues, structural)
    return bool(words) and all(
        not _PASCAL.match(w) and _not_an_acronym(w, hit, cues, structural) and common(w) for w in words
    )


def lone_opener(text: str, hit: Hit, cues: Cues) -> bool:
    """Whether the hit is one word nothing but its place capitalises: the first word of a line,
    list item, heading, HTML element or sentence ("Tweak `create_ssl_context` defaults",
    "<h2>Become a Sponsor</h2>", "INFO: Started server process"), that the model did not type
    and the documents never capitalise mid-sentence nor write as code. A name the model missed
    in that place is also written in a sentence somewhere, or is shaped as one (PascalCase,
    capitals, digits)."""
    name = hit.name
    if hit.label != UNKNOWN_LABEL or " " in name or not name[:1].isupper() or not name[1:].islower():
        return False
    if (name in cues.capitalised and not cues.written_lower(name)) or cues.in_code(name) or coined(name):
        return False  # "Support" in "Async Support" is written "support" in prose; "Cookiecutter" is no word
    if not all(c.isalpha() or c in "'’-" for c in name):
        return False
    before = TAG.sub(" ", text[text.rfind("\n", 0, hit.start) + 1 : hit.start])
    before = before.rstrip(" \t*_~>#|+-•\u00a0")
    return not any(c.isalnum() for c in before) or BREAK.match(before[-1:]) is not None


def title_phrase(text: str, hit: Hit, cues: Cues) -> bool:
    """Whether the hit is a phrase of a title: in a heading or the text of a link that reads as a
    title ("[Profiling Django REST Framework][...]", "[Implementing REST APIs with Embedded
    Privacy][...]"), several words opening with an English word the documents never write as a
    name, untyped by the model. A title capitalises every word, so its runs of capitals are
    phrases ("Developing RESTful APIs"), while a name there ("Slack", "Red Hat") is a single word
    or typed, or opens with a word that is no English word."""
    words = WORD.findall(hit.name)
    if hit.label != UNKNOWN_LABEL or len(words) < 2 or not cues.lexical(words[0]):
        return False
    line = _line_of(text, hit)
    if line.startswith("#"):
        return True
    return any(
        start <= hit.start and hit.end <= start + len(raw) and len(WORD.findall(raw)) >= 4
        for start, raw, _ in title_links(text)
    )


def _not_an_acronym(word: str, hit: Hit, cues: Cues, structural: bool) -> bool:
    """Capitals make an acronym of a word the lexicon does not know; an English word in capitals
    ("IMPLIED", "SPECIAL" in a licence) is shouting, unless the model typed it."""
    return not _acronym(word) or (structural and hit.label == UNKNOWN_LABEL and cues.lexical(word))


def _balanced(name: str) -> bool:
    depth = 0
    for c in name:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return depth == 0


def kind_of(
    name: str,
    votes: Counter[str],
    cues: Cues,
    kinds: Kinds,
    *,
    owner: bool = False,
    versioned: Collection[str] = (),
) -> str:
    """The label of a name from the cues, then from the model's votes (ontology labels). An
    `owner` (a site a list links by its home page) is an organisation unless code says otherwise,
    whatever its shape (PascalCase, capitals);
    `versioned` holds the names the documents write with a version after them."""
    label = _voted(votes, kinds)
    if _STANDARD.match(name) and kinds.standard != UNKNOWN_LABEL:
        return kinds.standard  # "RFC 7231", "IDNA 2008", "ISO 8601": a standard's body and number
    stem = _TRAILING_VERSION.sub("", name)
    if owner and kinds.organisation != UNKNOWN_LABEL and not cues.in_code(stem):
        return kinds.organisation  # a sponsor wall's "LaterPay", "DabApps": a company's shape is no code
    if kinds.technology != UNKNOWN_LABEL and _technology(stem, label, cues, kinds, versioned):
        return kinds.technology
    if label == kinds.person != UNKNOWN_LABEL and not _reads_as_person(name.split(), cues):
        return UNKNOWN_LABEL  # "Thread Pool", "Submit Cookie", "JSON": not read as a person's name
    return label


def _technology(name: str, label: str, cues: Cues, kinds: Kinds, versioned: Collection[str] = ()) -> bool:
    """Whether the documents' cues make the name a technology: code first, then versions and shapes."""
    words = name.split()
    if cues.in_code(name) or (len(words) > 1 and any(cues.in_code(w) for w in words)):
        return True  # "TestClient"; "Starlette Bridge" (a package named after the framework)
    if cues.technical and label != kinds.date and normalize_name(name) in versioned:
        return True  # "Python 3.12", "Django 1.8": people and companies have no versions
    if _PASCAL.match(name) and not _NAME_PREFIX.match(name):
        return cues.technical or label != kinds.organisation  # "GraphQL"; outside software docs "YouTube" stays one
    if cues.technical and len(words) == 1 and coined(name) and cues.written_lower(name):
        return True  # "pytest", "docopt": software docs write a tool's name in lower case, no one's name
    if cues.technical and label != kinds.person:
        return _acronym(name) or bool(_TECH_SHAPE.match(name))
    return False


def _reads_as_person(words: Sequence[str], cues: Cues) -> bool:
    """A person's name holds no common word and no acronym; a one-word name ("Cookie", "Bronze")
    is not even written in lower case anywhere, as a surname alone would not be."""
    if len(words) == 1:
        return fold_word(words[0]) not in cues.lower and not _acronym(words[0])
    return not any(cues.common(w) or _acronym(w) for w in words)


def _acronym(word: str) -> bool:
    return len(word) > 1 and word.isalpha() and word.isupper()


def _voted(votes: Counter[str], kinds: Kinds) -> str:
    """The label the model's typed votes agree on: a strict majority, else the neutral label."""
    typed = {label: n for label, n in votes.items() if label != UNKNOWN_LABEL}
    if not typed:
        return UNKNOWN_LABEL
    label, top = max(sorted(typed.items()), key=lambda item: item[1])
    if top * 2 <= sum(typed.values()):
        return kinds.neutral
    return label


def type_hits(
    documents: Sequence[Sequence[TextChunk]], per_chunk: Sequence[Sequence[Hit]], ontology: Ontology
) -> list[list[Hit]]:
    """`per_chunk` without junk, every hit of a name relabelled with the name's one label."""
    texts = [chunk.text for chunks in documents for chunk in chunks]
    refs = [definitions_of([c.text for c in chunks]) for chunks in documents for _ in chunks]
    tails = [_before(chunks, i) for chunks in documents for i in range(len(chunks))]
    split = [split_code(text) for text in texts]
    defined = defined_classes(texts)  # fenced or indented samples alike
    cues = Cues.from_split(split)
    kinds = Kinds.of(ontology)
    kept: list[list[Hit]] = []
    votes: dict[str, Counter[str]] = {}
    forms: dict[str, str] = {}
    said: dict[str, str] = {}  # names a link or a heading typed: the markup says what it is
    owners: set[str] = set()  # names of sites linked by their home page
    versioned: set[str] = set()  # names written with a version after them
    abbreviated: list[tuple[str, str]] = []  # (short form, long form) the texts define
    phrase = functools.partial(_phrase, cues=cues)
    for text, (prose, _), hits, definitions, before in zip(texts, split, per_chunk, refs, tails, strict=True):
        urls = [m.span() for m in URL_SPAN.finditer(text)] + [m.span() for m in _SCRIPT.finditer(text)]
        placed = [
            (h, capitals_forced(text, h))
            for h in hits
            if not any(s <= h.start < e for s, e in urls)
            and not shouted_words(text, h)
            and not _no_date(prose, h, kinds)
            and h.name not in defined  # a class a code sample defines is an example: `class UserSerializer`
        ]
        trimmed = [
            (trim_common_lead(part, cues, forced), forced)
            for h, forced in placed
            if not title_phrase(text, h, cues)
            for part in split_joined(h)
        ]
        good = [
            h
            for h, forced in trimmed
            if not name_junk(h.name, cues) and not all_common(h, cues, forced) and not lone_opener(text, h, cues)
        ]
        good = with_versions(text, good, kinds.date)
        versioned.update(normalize_name(_TRAILING_VERSION.sub("", h.name)) for h in good if _versioned(h.name))
        good, headed = heading_hits(text, good, kinds.technology, phrase)
        named: list[Hit] = []
        if kinds.event != UNKNOWN_LABEL:
            good, named = codename_hits(text, good, kinds.event)
        good, linked, homes = link_hits(text, good, kinds.links(), definitions, before, phrase)
        said.update((normalize_name(h.name), h.label) for h in [*headed, *named, *linked])
        owners.update(normalize_name(h.name) for h in homes if h.label == kinds.organisation != UNKNOWN_LABEL)
        marked, defined_here = abbreviation_hits(prose, [*good, *headed, *named, *linked, *homes])
        abbreviated.extend((normalize_name(d.short.name), normalize_name(d.long.name)) for d in defined_here)
        if cues.technical:  # software docs: "HTTP/2", "TLSv1.3" are protocols
            marked, shaped = shaped_hits(prose, marked, urls)
            marked += shaped
        coded = code_hits(prose, marked, cues.packages, in_lexicon)
        coded += reference_hits(text, [*marked, *coded], defined, urls)
        if kinds.technology != UNKNOWN_LABEL:  # written as code: software, as `kind_of` holds for identifiers
            said.update((normalize_name(h.name), kinds.technology) for h in coded)
        good = sorted([*marked, *coded], key=lambda h: h.start)
        for hit in list_kinds(text, good):
            norm = normalize_name(hit.name)
            votes.setdefault(norm, Counter())[hit.label] += 1
            forms.setdefault(norm, hit.name)
        kept.append(good)
    labels = {
        norm: said.get(norm) or kind_of(forms[norm], counts, cues, kinds, owner=norm in owners, versioned=versioned)
        for norm, counts in votes.items()
    }
    for short, long in abbreviated:
        if short in labels and long in labels:
            labels[short] = labels[long] = _abbreviated(long, labels[short], labels[long], kinds)
    return [[_relabel(h, labels[normalize_name(h.name)]) for h in hits] for hits in kept]


def _abbreviated(long: str, short_label: str, long_label: str, kinds: Kinds) -> str:
    """One label for an abbreviation and its long form, which name one thing: the long form's,
    which says what the thing is; for a long form of English words alone ("denial of service",
    "machine learning"), an idea (the neutral label), whatever the acronym's shape suggested;
    else the short form's."""
    if long_label != UNKNOWN_LABEL:
        return long_label
    if all(in_lexicon(w) for w in WORD.findall(long)):
        return kinds.neutral
    return short_label


LIST_ITEMS = 4
"""Names a comma-separated line must hold to read as a list whose items share a kind."""


def list_kinds(text: str, hits: Sequence[Hit]) -> list[Hit]:
    """The hits, those the model left untyped in a list of names given the kind most of the others
    carry ("Individual backers: Jure Cuhalev, Kevin Brolly, <a ...>Xavier Ordoquy</a>, ..."): a
    list's items are of one kind, and markup around an item hides it from the model. Only a
    line of at least `LIST_ITEMS` names and as many commas less one, most of them typed alike."""
    if all(h.label != UNKNOWN_LABEL for h in hits):
        return list(hits)
    out = list(hits)
    lines: dict[int, list[int]] = {}
    for i, h in enumerate(hits):
        lines.setdefault(text.rfind("\n", 0, h.start), []).append(i)
    for start, members in lines.items():
        end = text.find("\n", start + 1)
        if len(members) < LIST_ITEMS or text.count(",", start + 1, len(text) if end < 0 else end) < LIST_ITEMS - 1:
            continue
        labels = Counter(hits[i].label for i in members if hits[i].label != UNKNOWN_LABEL)
        if not labels:
            continue
        label, n = labels.most_common(1)[0]
        if n * 2 > len(members):
            for i in members:
                if hits[i].label == UNKNOWN_LABEL:
                    out[i] = hits[i]._replace(label=label)
    return out


def _phrase(name: str, cues: Cues) -> bool:
    """Whether a link's text or a heading is a phrase, not a name: a capitalised common word alone
    ("Documentation"), or words with an English word in lower case ("GitHub repository", "submit a
    pull request"; "Keep a Changelog" keeps its short "a"). A package's lower-case name alone
    ("requests") is a name."""
    words = WORD.findall(name)
    if len(words) == 1:
        return words[0][:1].isupper() and cues.common(words[0]) and not cues.in_code(words[0])
    return all(cues.common(w) for w in words) or any(w.islower() and len(w) >= 4 and in_lexicon(w) for w in words)


LINK_CONTEXT = 400
"""Characters of the previous passage read with a passage's links: an HTML line cut between its
`<a href=...>` and the link's text (a sponsor wall on one line) still names its site."""


def _before(chunks: Sequence[TextChunk], i: int) -> str:
    """The end of the document's text before passage `i`, from the passage before it (passages
    may overlap: only what precedes passage `i`'s start is taken)."""
    if i == 0:
        return ""
    previous, current = chunks[i - 1], chunks[i]
    return previous.text[: max(0, current.start - previous.start)][-LINK_CONTEXT:]


def _no_date(prose: str, hit: Hit, kinds: Kinds) -> bool:
    """Whether a hit the model took for a date is none: a number written as code or cited as an
    issue (`{issue}`1397``, "#1091"), or a duration ("0.5 seconds", "2 weeks")."""
    if hit.label != kinds.date:
        return False
    if hit.name.isdigit():
        before = prose[max(0, hit.start - 40) : hit.start]
        return before.count("`") % 2 == 1 or before.endswith("#")
    return _DURATION.search(hit.name) is not None


def _versioned(name: str) -> bool:
    return bool(_TRAILING_VERSION.search(name)) and any(c.isalpha() for c in _TRAILING_VERSION.sub("", name))


def _relabel(hit: Hit, label: str) -> Hit:
    return hit if hit.label == label else hit._replace(label=label)
