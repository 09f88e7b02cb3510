"""NER tags map onto whatever labels the ontology declares, or Unknown; bare numbers are dropped."""

from __future__ import annotations

import pytest

from evigraph.ingest.extraction.labels import TAG_CANDIDATES, keep_tag, map_label
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import UNKNOWN_LABEL, EntityType, Ontology


def ontology(*labels: str) -> Ontology:
    return Ontology(entities=tuple(EntityType(label=label) for label in labels))


@pytest.mark.parametrize(
    ("tag", "label"),
    [
        ("PERSON", "Person"),
        ("ORG", "Organization"),
        ("GPE", "Location"),
        ("LOC", "Location"),
        ("FAC", "Location"),
        ("DATE", "Date"),
        ("TIME", "Date"),
        ("EVENT", "Event"),
        ("LAW", "Law"),
        ("PRODUCT", "Product"),
        ("WORK_OF_ART", "Product"),
        ("LANGUAGE", "Concept"),
    ],
)
def test_default_ontology_mapping(tag: str, label: str) -> None:
    assert map_label(tag, DEFAULT_ONTOLOGY) == label


@pytest.mark.parametrize("tag", ["MONEY", "QUANTITY", "PERCENT", "NOT_A_TAG"])
def test_tags_without_a_default_label_are_unknown(tag: str) -> None:
    assert map_label(tag, DEFAULT_ONTOLOGY) == UNKNOWN_LABEL


def test_first_declared_candidate_wins_in_the_ontologys_spelling() -> None:
    onto = ontology("company", "CITY", "Place")
    assert map_label("ORG", onto) == "company"
    # GPE prefers "Place" over "City": candidates are tried in order, not the ontology's order.
    assert map_label("GPE", onto) == "Place"
    assert map_label("PERSON", onto) == UNKNOWN_LABEL


def test_tag_case_does_not_matter() -> None:
    assert map_label("person", DEFAULT_ONTOLOGY) == "Person"


def test_quantities_map_when_the_ontology_has_them() -> None:
    assert map_label("QUANTITY", ontology("Measure")) == "Measure"
    assert map_label("MONEY", ontology("Quantity")) == "Quantity"


@pytest.mark.parametrize("tag", ["CARDINAL", "ORDINAL", "cardinal", "MONEY", "PERCENT", "QUANTITY"])
def test_numbers_and_amounts_are_dropped(tag: str) -> None:
    assert keep_tag(tag, DEFAULT_ONTOLOGY) is None


def test_keep_tag_returns_the_label_or_unknown_for_kept_tags() -> None:
    assert keep_tag("PERSON", DEFAULT_ONTOLOGY) == "Person"
    assert keep_tag("EVENT", ontology("Person")) == UNKNOWN_LABEL  # kept, untyped in this ontology


def test_every_spacy_ner_tag_is_covered() -> None:
    spacy_tags = {
        "CARDINAL", "DATE", "EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "MONEY", "NORP",
        "ORDINAL", "ORG", "PERCENT", "PERSON", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART",
    }  # fmt: skip
    assert spacy_tags - set(TAG_CANDIDATES) == {"CARDINAL", "ORDINAL"}
