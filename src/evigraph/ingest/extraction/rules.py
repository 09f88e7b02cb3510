"""Rule-based extraction: regular expressions only, no model, no optional dependency.

This is the extractor of last resort, used when spaCy is not installed: it must work on any
machine, instantly, and be predictable. It finds the name shapes that carry most of the value in
a knowledge graph (titled people, capitalised multi-word names, dates, measured quantities) and
types them by cheap suffix heuristics ("... University" is an organisation, "... River" a place);
anything it cannot type is kept as `UNKNOWN_LABEL` rather than guessed, so the graph stays honest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.ingest.extraction.consensus import graphs_for_batch
from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.labels import map_label
from evigraph.ingest.extraction.names import clean_name_span
from evigraph.ingest.extraction.offload import run_offloaded
from evigraph.ingest.sentences import split_sentences
from evigraph.models import GraphData, Ontology, TextChunk


def _words(text: str) -> list[str]:
    """Word lists are written as prose so they stay readable and easy to extend."""
    return text.split()


_UP = "A-ZÀ-ÖØ-Þ"
_LOW = "a-zß-öø-ÿ"
# A capitalised word: "Oxford", "NASA", "O'Brien", "Jean-Paul", "McDonald" (not "Smith's").
_CAP_WORD = rf"[{_UP}][{_UP}{_LOW}]*(?:[-'’](?!s\b)[{_UP}{_LOW}]+)*"
_INITIAL = rf"[{_UP}]\.(?:\s?[{_UP}]\.)*"
_NAME_PART = rf"(?:{_INITIAL}|{_CAP_WORD})"
_GAP = r"[ \t\u00a0]+"  # names never run across a line break (headings, list items)

_TITLES = _words(
    "Dr Mr Mrs Ms Mx Prof Professor Sir Dame Lord Lady President Vice-President Senator Sen "
    "Governor Gov Mayor King Queen Prince Princess Emperor Empress Gen Colonel Col Captain Capt "
    "Lieutenant Lt Sergeant Sgt Admiral Judge Rev Reverend Pope Chancellor Minister Chairman "
    "Chairwoman CEO Countess Duke Duchess Baron Sheikh Rabbi Bishop Archbishop"
)
_TITLE_RE = re.compile(
    rf"\b(?:Prime Minister|{'|'.join(sorted(map(re.escape, _TITLES), key=len, reverse=True))})"
    rf"\.?{_GAP}(?P<name>{_NAME_PART}(?:{_GAP}{_NAME_PART}){{0,3}})"
)

_CONNECTORS = (
    r"(?:of the|of|de la|de|del|della|di|da|du|des|van der|van den|van|von der|von|der|den|la|le"
    r"|the|for|&|bin|ibn|al)"
)
_NAME_RE = re.compile(rf"{_CAP_WORD}(?:(?:{_GAP}{_CONNECTORS})?{_GAP}{_CAP_WORD})*")

_MONTHS_FULL = "January February March April May June July August September October November December"
_MONTHS = _words(_MONTHS_FULL) + _words("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec")
_WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_MONTH = rf"(?:{'|'.join(sorted(_MONTHS, key=len, reverse=True))})\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1\d{3}|20\d{2})"
_DATE_RE = re.compile(
    rf"\b(?:{_DAY}\s+{_MONTH},?\s+{_YEAR}"  # 12 March 2004
    rf"|{_MONTH}\s+{_DAY},?\s+{_YEAR}"  # March 12, 2004
    rf"|{_MONTH}\s+{_YEAR}"  # March 2004
    r"|\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))\b"  # 2004-03-12
)
_YEAR_RE = re.compile(
    rf"\b(?:in|since|from|by|until|till|of|year|during|before|after)\s+(?P<year>{_YEAR})\b(?!-)", re.I
)

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALE = r"(?:thousand|million|billion|trillion|bn|m)"
_UNITS = _words(
    "km km² km2 m² m2 m cm mm µm nm mi miles mile ft feet foot inches yd yards kg g mg lb lbs "
    "tonnes tonne tons ton oz ml litres liters gallons metres meters metre meter kilometres "
    "kilometers kilograms grams hectares ha acres years year months month weeks week days day hours "
    "hour minutes minute seconds second km/h mph knots °C °F GB MB TB kB GHz MHz Hz kW MW GW "
    "kWh mAh people inhabitants residents employees"
)
_UNIT = rf"(?:{'|'.join(sorted(map(re.escape, _UNITS), key=len, reverse=True))})"
_QUANTITY_RE = re.compile(
    rf"(?:[$€£¥]\s?(?:{_NUMBER})(?:\s*{_SCALE}\b)?"  # $40 billion, €3.5m
    rf"|\b(?:{_NUMBER})\s?(?:%|percent\b|per cent\b)"  # 20%, 20 percent
    rf"|\b(?:{_NUMBER})\s+(?:thousand|million|billion|trillion)\b"  # 3.2 million
    rf"|\b(?:{_NUMBER})\s?{_UNIT}(?![\w/]))"  # 5 km, 150 kg, 30 years
)

# Capitalised words that start sentences or are otherwise never a name on their own.
_STOP = frozenset(
    _words(
        """
    The This That These Those There Here In It Its He She His Her Hers They Them Their We Our You
    Your I Me My Mine A An On At For But And Or Nor So Yet However Although Though Because Since
    While Whereas When Where What Which Who Whom Whose Why How If Then Thus Therefore Hence Also
    As After Before During Until Upon Within Without With From To Into Of Off By About Above Below
    Under Over Between Among Across Through Throughout Despite Following According Meanwhile
    Moreover Furthermore Nevertheless Nonetheless Instead Indeed Still Later Earlier Today
    Yesterday Tomorrow Now Once Soon Each Every Both Either Neither All Any Some Many Most Much
    More Few Several Other Another Such No Not None Only Even Just Finally First Second Third Last
    Next One Two Three Four Five Six Seven Eight Nine Ten Is Are Was Were Be Been Being Has Have
    Had Do Does Did Can Could May Might Must Shall Should Will Would Let Yes Please Thank Thanks
    Mr Mrs Ms Dr Prof Sir Note See Figure Table Chapter Section Part Page Vol Unlike Like Although
    Initially Originally Currently Recently Eventually Subsequently Additionally Similarly
    Overall Generally Usually Often Sometimes Perhaps Well Over Around Near Along Against Beyond
    """
    )
) | frozenset(_TITLES)
_MONTH_OR_DAY = frozenset(_WEEKDAYS + _MONTHS)

_SUFFIX_TAGS: dict[str, str] = {}
for _tag, _names in (
    (
        "ORG",
        "Inc Corp Corporation Ltd LLC Plc PLC GmbH AG Co Company Companies University College "
        "Institute Institution Association Agency Bank Party Group Foundation Council Ministry "
        "Department Committee Commission Society Club Union Federation League Team Laboratory "
        "Laboratories Labs School Academy Museum Hospital Church Army Navy Force Court Parliament "
        "Congress Senate Board Bureau Office Organization Organisation Authority Press Records "
        "Studios Airlines Systems Technologies Holdings Partners Trust Fund Service Services",
    ),
    (
        "GPE",
        "City Town Village River Mountain Mountains Mount Lake Island Islands County Street Road "
        "Avenue Province State States Republic Kingdom Empire Ocean Sea Valley Bay Desert Forest "
        "Park Peninsula Coast Region District Territory Canyon Gulf Strait Falls Hill Hills Square",
    ),
    ("LAW", "Act Treaty Law Regulation Directive Amendment Convention Accord Accords Constitution Bill"),
    (
        "EVENT",
        "War Battle Election Elections Olympics Games Summit Festival Revolution Cup Championship "
        "Championships Conference Crisis Massacre Uprising Siege Expedition Tournament Award Awards",
    ),
):
    for _word in _words(_names):
        _SUFFIX_TAGS[_word] = _tag
_PLACE_PREFIXES = frozenset(_words("Mount Mt Lake Cape Fort Port Isle Lake Gulf Sierra Rio"))
_ROMAN = re.compile(r"^(?:[IVXLC]+|\d+)$")
_CONNECTOR_WORDS = frozenset(_words("of the de la del della di da du des van der den von le for & bin ibn al"))

_OPENERS = frozenset("\"'“‘([*-–—• \t")

_NUMERIC_TAGS = frozenset({"DATE", "QUANTITY"})
"""Tags whose names may be all digits ("1998", "40%"); the name filter refuses such names otherwise."""

# Priorities when matches overlap: the more specific pattern wins.
_DATE, _QUANTITY, _PERSON = 0, 1, 2


class RuleBasedExtraction(ExtractionStrategy):
    """Regex extraction of people, organisations, places, laws, events, dates and quantities.

    Works without any model, so it is the fallback of `default_extractor()`. Precision is favoured
    over recall: a name is typed only when its shape says so (a title, a suffix), and sentence-
    initial capitalised words that are ordinary words are not taken for names.
    """

    name = "rules"
    queues_batches = True

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        """Extract one document (runs in a worker thread like `extract_many`)."""
        return (await self.extract_many([chunks], ontology))[0]

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        """Extract several documents off the event loop: a large batch in the worker process
        (`offload`), a small one in a thread."""
        return await run_offloaded(extract_documents, documents, ontology, chunks=sum(map(len, documents)))

    def extract_sync(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        """The synchronous core, for callers without an event loop (and for benchmarks)."""
        return extract_documents(documents, ontology)


def extract_documents(documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
    """One graph per document; module-level so a worker process can run it."""
    per_chunk = [find_hits(chunk.text, ontology) for chunks in documents for chunk in chunks]
    return graphs_for_batch(documents, per_chunk, ontology)


def find_hits(text: str, ontology: Ontology) -> list[Hit]:
    """Every entity the rules find in `text`, non-overlapping, in reading order."""
    taken: list[tuple[int, int]] = []
    hits: list[Hit] = []
    labels: dict[str, str] = {}

    def take(start: int, end: int, tag: str) -> None:
        if start >= end or any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))  # the raw span: what it covered is used up even if it is junk
        span = clean_name_span(text, start, end, numeric_ok=tag in _NUMERIC_TAGS)
        if span is None:
            return
        label = labels.get(tag)
        if label is None:
            label = labels[tag] = map_label(tag, ontology)
        hits.append(Hit(span[0], span[1], text[span[0] : span[1]], label))

    candidates: list[tuple[int, int, int, str]] = []
    for m in _DATE_RE.finditer(text):
        candidates.append((_DATE, m.start(), m.end(), "DATE"))
    for m in _YEAR_RE.finditer(text):
        candidates.append((_DATE, m.start("year"), m.end("year"), "DATE"))
    for m in _QUANTITY_RE.finditer(text):
        candidates.append((_QUANTITY, m.start(), m.end(), "QUANTITY"))
    for m in _TITLE_RE.finditer(text):
        start, end = m.start("name"), m.end("name")
        if text[end - 1] == ".":
            end -= 1  # the last "initial" is a sentence-final period: "... met Prof. X Y."
        if _suffix_tag(text[start:end]):
            continue  # "Prince Edward Island" is a place; the name rule types it
        candidates.append((_PERSON, start, end, "PERSON"))
    for _, start, end, tag in sorted(candidates, key=lambda c: (c[0], c[1], -c[2])):
        take(start, end, tag)

    # Capitalised names are searched only outside what the specific patterns took, so that
    # "President Abraham Lincoln of Illinois" still yields "Illinois" after the person is taken.
    masked = text
    for s, e in taken:
        masked = masked[:s] + "\x00" * (e - s) + masked[e:]
    sentence_starts = {s for s, _ in split_sentences(text)}
    for m in _NAME_RE.finditer(masked):
        found = _clean_name(text, m.start(), m.end(), sentence_starts)
        if found is not None:
            take(found[0], found[1], _suffix_tag(text[found[0] : found[1]]))
    hits.sort(key=lambda h: h.start)
    return hits


def _clean_name(text: str, start: int, end: int, sentence_starts: set[int]) -> tuple[int, int] | None:
    """Trim a capitalised run to the name it holds, or None when it holds none.

    Leading stop words go ("In Paris" -> "Paris", "The Bank of America" -> "Bank of America");
    a single remaining word is dropped when it is a stop word, a month or weekday, one letter, or
    an ordinary word that merely starts a sentence.
    """
    words = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", text[start:end])]
    while words and (text[words[0][0] : words[0][1]] in _STOP or _is_connector(text, words[0])):
        words.pop(0)
    while words and _is_connector(text, words[-1]):
        words.pop()
    if not words:
        return None
    s, e = words[0][0], words[-1][1]
    if len(words) == 1:
        word = text[s:e]
        if len(word) < 2 or word in _STOP or word in _MONTH_OR_DAY:
            return None
        if _at_sentence_start(text, s, sentence_starts) and _looks_common(text, word):
            return None
    return s, e


def _is_connector(text: str, word: tuple[int, int]) -> bool:
    return text[word[0] : word[1]] in _CONNECTOR_WORDS


def _at_sentence_start(text: str, start: int, sentence_starts: set[int]) -> bool:
    """Whether only opening quotes, brackets or a list bullet stand between a sentence start and `start`."""
    i = start
    while True:
        if i == 0 or i in sentence_starts or text[i - 1] == "\n":
            return True
        if text[i - 1] not in _OPENERS:
            return False
        i -= 1


def _looks_common(text: str, word: str) -> bool:
    """A sentence-initial word is ordinary if it is written lower-case elsewhere or reads like one."""
    lower = word.lower()
    if word.isupper() and len(word) > 1:
        return False  # an acronym ("NASA") is a name wherever it stands
    if lower.endswith(("ly", "ing", "ed")):
        return True
    return re.search(rf"\b{re.escape(lower)}\b", text) is not None


def _suffix_tag(name: str) -> str:
    """NER-style tag from the head word of a name: "Bank of America" -> ORG, "World War II" -> EVENT."""
    words = name.split()
    if not words:
        return ""
    head = words
    for i, w in enumerate(words):
        if w in _CONNECTOR_WORDS:
            head = words[:i]  # "University of Oxford": the head precedes "of"
            break
    while len(head) > 1 and _ROMAN.match(head[-1]):
        head = head[:-1]
    for word in (head[-1].rstrip("."), words[-1].rstrip(".")):
        tag = _SUFFIX_TAGS.get(word)
        if tag is not None:
            return tag
    return "GPE" if len(words) > 1 and words[0] in _PLACE_PREFIXES else ""
