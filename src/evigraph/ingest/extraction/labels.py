"""Map named-entity tags (spaCy's OntoNotes scheme) onto the labels of an ontology.

Offline extractors find typed spans, but their tag set is fixed by the model while the ontology
is the user's choice. Each tag therefore lists the labels a user is likely to have called that
kind of thing, in order of preference; the first one the ontology declares wins, spelled the way
the ontology spells it, so a user ontology with "Company" instead of "Organization" still gets
typed entities.

A user's labels are often names no list foresees ("Maintainer", "Dependency", "Vendor"), but
their descriptions say what they hold ("a person who maintains the project"). So where no
candidate is declared, each label is read by the words of its name and description
(`kind_of_label`) and joins the one kind those words describe best; a kind takes its best such
label. A label whose words describe no kind gets no entity by description, and a kind no label
describes stays `UNKNOWN_LABEL` rather than a label the ontology never meant for it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from types import MappingProxyType

from evigraph.models import UNKNOWN_LABEL, Ontology
from evigraph.store.terms import passage_words

TAG_CANDIDATES: Mapping[str, tuple[str, ...]] = {
    "PERSON": ("Person", "People", "Human", "Individual"),
    "NORP": ("Nationality", "Group", "Concept"),
    "FAC": ("Facility", "Building", "Location", "Place", "Landmark"),
    "ORG": ("Organization", "Organisation", "Company", "Institution", "Agency"),
    "GPE": ("Location", "Place", "Country", "City", "Region"),
    "LOC": ("Location", "Place", "Region", "Geography"),
    "PRODUCT": ("Product", "Technology", "Device", "Work"),
    "EVENT": ("Event", "Happening", "Occurrence"),
    "WORK_OF_ART": ("Product", "Work", "CreativeWork", "Artwork", "Concept"),
    "LAW": ("Law", "Regulation", "Legislation", "Policy", "Standard"),
    "LANGUAGE": ("Language", "Concept"),
    "DATE": ("Date", "Time", "Period"),
    "TIME": ("Time", "Date"),
    "PERCENT": ("Quantity", "Measure", "Percentage"),
    "MONEY": ("Money", "Quantity", "Measure", "Amount"),
    "QUANTITY": ("Quantity", "Measure", "Amount"),
}
"""Candidate ontology labels per NER tag, most specific-to-the-default-ontology first."""

DROPPED_TAGS = frozenset({"CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY"})
"""Numbers, ranks and amounts ("three", "second", "$5", "80%"): values of something, not things a
graph should hold. The small English model also tags markdown headings as MONEY ("### List"): on
the FastAPI docs 1,393 of its 6,488 spans were MONEY and every one checked was a heading."""


def keep_tag(tag: str, ontology: Ontology) -> str | None:
    """The label for a span with this NER tag, or None when the span should not be an entity.

    Separate from `map_label` so that "not worth keeping" (None) stays distinct from "worth
    keeping but untyped in this ontology" (`UNKNOWN_LABEL`).
    """
    if tag.upper() in DROPPED_TAGS:
        return None
    return map_label(tag, ontology)


def map_label(tag: str, ontology: Ontology) -> str:
    """The ontology label for an NER tag, or `UNKNOWN_LABEL` when the ontology declares none.

    Matching is case-insensitive because ontologies are hand-written; the ontology's own spelling
    is returned so that `Ontology.has_label` holds for the result.
    """
    return map_candidates(TAG_CANDIDATES.get(tag.upper(), ()), ontology)


def map_candidates(candidates: tuple[str, ...], ontology: Ontology) -> str:
    """The first of `candidates` the ontology declares (in its spelling), else the label its
    descriptions give the candidates' kind (`described_labels`), else `UNKNOWN_LABEL`."""
    declared = {label.casefold(): label for label in ontology.labels}
    for candidate in candidates:
        found = declared.get(candidate.casefold())
        if found is not None:
            return found
    described = described_labels(ontology)
    return next((described[c] for c in candidates if c in described), UNKNOWN_LABEL)


KIND_WORDS: Mapping[str, frozenset[str]] = {
    kind: frozenset(w for phrase in words.split() for w in passage_words(phrase))
    for kind, words in {
        "Person": "person people human individual author maintainer contributor developer engineer researcher "
        "scientist user employee member character creator founder speaker writer artist politician player",
        "Organization": "organization organisation company institution agency team group foundation corporation "
        "business firm vendor sponsor university nonprofit publisher startup enterprise committee",
        "Location": "location place country city region geography area site landmark building facility continent "
        "state province town address venue",
        "Technology": "technology software library framework tool package module language protocol format api sdk "
        "database runtime dependency plugin extension program code class function component engine driver",
        "Product": "product device vehicle service app application hardware offering platform brand model",
        "Date": "date time period year day month era century decade deadline",
        "Event": "event happening war election release meeting conference incident summit talk workshop "
        "launch outage battle festival",
        "Concept": "concept idea field theory topic notion principle paradigm subject domain discipline term",
        "Law": "law regulation treaty standard policy license licence legislation act statute rfc specification "
        "rule compliance",
        "Dataset": "dataset data benchmark corpus collection table record",
        "Method": "method algorithm procedure technique approach process pattern practice workflow recipe strategy",
    }.items()
}
"""Words that describe each kind the candidates stand for (the default ontology's labels, a
test holds the keys to them),
folded as search folds words. A candidate list's kinds are its candidates that are keys, in its
order: a product goes to a label describing products, else to one describing technologies."""

_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""The words of a label's name: "OpenSourceProject" -> Open, Source, Project; "API_Key" -> API, Key."""


def kind_of_label(label: str, description: str) -> tuple[str | None, float]:
    """The kind a label's name and description describe best, and how well: each word shared
    with a kind counts by how few kinds it describes (so "named", "data" in many lists weigh
    little), a word of the label's name twice. None when no word is shared."""
    named = [w for part in _PARTS.findall(label) for w in passage_words(part)]
    described = passage_words(description)
    scores: dict[str, float] = {}
    for words, weight in ((named, 2.0), (described, 1.0)):
        for word in dict.fromkeys(words):
            holders = [kind for kind, known in KIND_WORDS.items() if word in known]
            for kind in holders:
                scores[kind] = scores.get(kind, 0.0) + weight * math.log(1 + len(KIND_WORDS) / len(holders))
    if not scores:
        return None, 0.0
    kind = max(KIND_WORDS, key=lambda k: scores.get(k, 0.0))  # ties: the order of KIND_WORDS
    return kind, scores[kind]


@functools.lru_cache(maxsize=64)
def described_labels(ontology: Ontology) -> Mapping[str, str]:
    """Kind -> the ontology label whose words describe it best, over the labels it describes
    best (ties: the label declared first). Cached per ontology, so read-only."""
    best: dict[str, tuple[float, str]] = {}
    for entity in ontology.entities:
        if entity.label == UNKNOWN_LABEL:
            continue
        kind, score = kind_of_label(entity.label, entity.description)
        if kind is not None and score > best.get(kind, (0.0, ""))[0]:
            best[kind] = (score, entity.label)
    return MappingProxyType({kind: label for kind, (_, label) in best.items()})
