"""A user's own ontology types entities by its labels' descriptions, through a real ingest.

Issue 34: with a custom ontology, spaCy and the rules put every entity under Unknown, because an
NER tag found a label only by a name from a fixed list ("Person", "Company"). Labels are now also
read by their descriptions (`labels.described_labels`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.models import UNKNOWN_LABEL, EntityType, Ontology

PROJECT = Ontology(
    entities=(
        EntityType(label="Maintainer", description="A person who maintains or contributes to the project."),
        EntityType(label="Dependency", description="A Python package, library or framework the project uses."),
        EntityType(label="Sponsor", description="A company or foundation that funds the work."),
        EntityType(label="Milestone", description="The calendar date or year something happened."),
    )
)

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
