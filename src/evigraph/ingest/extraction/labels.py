"""Map named-entity tags (spaCy's OntoNotes scheme) onto the labels of an ontology.

Offline extractors find typed spans, but their tag set is fixed by the model while the ontology
is the user's choice. Each tag therefore lists the labels a user is likely to have called that
kind of thing, in order of preference; the first one the ontology declares wins, spelled the way
the ontology spells it, so a user ontology with "Company" instead of "Organization" still gets
typed entities, and one without any fitting label gets `UNKNOWN_LABEL` rather than a label it
never declared.
"""

from __future__ import annotations

from collections.abc import Mapping

from evigraph.models import UNKNOWN_LABEL, Ontology

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
    """The first of `candidates` the ontology declares (in its spelling), else `UNKNOWN_LABEL`."""
    declared = {label.casefold(): label for label in ontology.labels}
    for candidate in candidates:
        found = declared.get(candidate.casefold())
        if found is not None:
            return found
    return UNKNOWN_LABEL
