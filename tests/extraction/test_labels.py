"""NER tags map onto the labels an ontology declares, by name or by their descriptions, or Unknown; bare
numbers are dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.ingest.extraction.labels import (
    KIND_WORDS,
    TAG_CANDIDATES,
    described_labels,
    keep_tag,
    kind_of_label,
    map_label,
)
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


# -- a user's labels, matched by their names' and descriptions' words ------------------------------

PROJECT = Ontology(
    entities=(
        EntityType(label="Maintainer", description="A person who maintains or contributes to the project."),
        EntityType(label="Dependency", description="A Python package or framework the project depends on."),
        EntityType(label="Sponsor", description="A company or foundation that funds the work."),
        EntityType(label="Milestone", description="The calendar date or year something happened."),
        EntityType(label="Mood", description="How the team feels about it."),
    )
)


@pytest.mark.parametrize(
    ("tag", "label"),
    [
        ("PERSON", "Maintainer"),
        ("ORG", "Sponsor"),
        ("DATE", "Milestone"),
        ("PRODUCT", "Dependency"),  # no label describes products: the next kind of its list, technologies
        ("GPE", UNKNOWN_LABEL),  # no label describes a place: untyped, not the nearest guess
        ("EVENT", UNKNOWN_LABEL),
    ],
)
def test_a_user_label_is_found_by_its_description(tag: str, label: str) -> None:
    assert map_label(tag, PROJECT) == label


def test_a_label_joins_one_kind_and_a_name_in_the_candidates_still_wins() -> None:
    # "team" would describe an organisation, but "person" and the name's "Maintainer" describe a
    # person better, so the label is the people's alone and organisations keep "Sponsor".
    assert kind_of_label("Maintainer", "A person or team member who maintains it")[0] == "Person"
    assert described_labels(PROJECT)["Organization"] == "Sponsor"
    assert kind_of_label("Mood", "How the team feels about it.")[0] == "Organization"  # only "team" is shared
    assert described_labels(PROJECT).get("Organization") != "Mood"  # a weaker match loses to a stronger one
    named = Ontology(entities=(*PROJECT.entities, EntityType(label="Person", description="Anyone at all.")))
    assert map_label("PERSON", named) == "Person"


def test_the_kinds_are_the_default_ontology_s_labels() -> None:
    assert set(KIND_WORDS) == set(DEFAULT_ONTOLOGY.labels)
    assert described_labels(DEFAULT_ONTOLOGY) == {label: label for label in DEFAULT_ONTOLOGY.labels}


def test_the_words_of_a_label_s_name_count_without_a_description() -> None:
    assert kind_of_label("OpenSourceLibrary", "")[0] == "Technology"
    assert kind_of_label("API_Spec", "")[0] == "Technology"
    assert kind_of_label("Widget", "") == (None, 0.0)
    bare = Ontology(entities=(EntityType(label="Author"), EntityType(label="Town")))
    assert map_label("PERSON", bare) == "Author" and map_label("GPE", bare) == "Town"


# -- through a real ingest: spaCy and the rules put every entity under Unknown before (issue 34) ------

DOC = """# About the project

Tom Christie started the project in 2018, and Marcelo Trylesinski maintains it today.
The Mozilla Foundation funded the work on HTTP/2 through a grant.

The project is tested with `pytest` and serves requests through `TestClient`:

```python
import httpx
from starlette.testclient import TestClient
```
"""


CORRESPONDING = {"Person": "Maintainer", "Technology": "Dependency", "Organization": "Sponsor", "Date": "Milestone"}


async def labels_of(tmp_path: Path, extractor: str, ontology: Ontology | None) -> dict[str, str]:
    folder = tmp_path / ("custom" if ontology else "default")
    folder.mkdir()
    doc = folder / "about.md"
    doc.write_text(DOC, encoding="utf-8")
    kwargs = {"ontology": ontology} if ontology else {}
    async with KnowledgeBase(folder / "kb.db", extractor=extractor, embedder="none", **kwargs) as kb:
        report = await kb.ingest([doc], progress=False)
        assert report.ok, report.failed
        records = await kb.store.entity_records()  # type: ignore[union-attr]
    return {r.name: r.label for r in records}


@pytest.mark.parametrize("extractor", ["rules", "spacy"])
async def test_a_custom_ontology_types_entities_by_its_descriptions(tmp_path: Path, extractor: str) -> None:
    custom = await labels_of(tmp_path, extractor, PROJECT)
    assert custom["Mozilla Foundation"] == "Sponsor"
    assert custom["TestClient"] == "Dependency"
    assert custom["2018"] == "Milestone"
    if extractor == "spacy":  # the rules type a person only by a title ("Dr.")
        assert custom["Tom Christie"] == custom["Marcelo Trylesinski"] == "Maintainer"
    assert set(custom.values()) <= {*PROJECT.labels, UNKNOWN_LABEL}
    # Every entity the default ontology types as a kind the custom one describes gets that label.
    default = await labels_of(tmp_path, extractor, None)
    expected = {name: CORRESPONDING[label] for name, label in default.items() if label in CORRESPONDING}
    assert expected and {name: custom.get(name) for name in expected} == expected
