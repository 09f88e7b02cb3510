"""Offline typing by what the documents say: code is Technology, common words and fragments are no
entities, a person's name reads as one; real names in prose keep the model's label."""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.entity_types import Cues, name_junk, type_hits
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import UNKNOWN_LABEL, EntityType, Ontology, TextChunk

DOC = """# Responses

Starlette includes a few response classes. The Request and Response classes handle the method of
a request. Each path holds parameters, and hello is said to the world.
Tom Christie wrote Starlette, and he joined Encode in 2018. Tom bought phones from Apple, and an
apple is a fruit.

```python
from starlette.responses import JSONResponse
import uvicorn

async def app(scope, receive, send):
    response = JSONResponse({"hello": "Hello World"})
    await response(scope, receive, send)
```

## Path Parameters

Install it with `pip install httpx`, then call `TestClient` in your tests.
"""


def hits_for(text: str, names: Sequence[tuple[str, str]]) -> list[Hit]:
    out = []
    for name, label in names:
        start = text.index(name)
        out.append(Hit(start, start + len(name), name, label))
    return out


def typed(names: Sequence[tuple[str, str]], ontology: Ontology = DEFAULT_ONTOLOGY) -> dict[str, str]:
    chunk = TextChunk(index=0, text=DOC, start=0, end=len(DOC))
    [hits] = type_hits([[chunk]], [hits_for(DOC, names)], ontology)
    asked = {name for name, _ in names}
    return {h.name: h.label for h in hits if h.name in asked}


def test_names_written_as_code_are_technology_whatever_the_model_said() -> None:
    found = typed([("Starlette", "Person"), ("JSONResponse", "Organization"), ("TestClient", "Location")])
    assert found == {"Starlette": "Technology", "JSONResponse": "Technology", "TestClient": "Technology"}


def test_common_words_in_headings_and_lower_case_identifiers_are_no_entities() -> None:
    found = typed([("Path Parameters", "Organization"), ("Responses", "Organization"), ("scope", "Person")])
    assert found == {}


def test_people_and_companies_in_prose_keep_the_model_s_label() -> None:
    found = typed([("Tom Christie", "Person"), ("Encode", "Organization"), ("Apple", "Organization")])
    assert found == {"Tom Christie": "Person", "Encode": "Organization", "Apple": "Organization"}


def test_a_person_s_name_must_read_as_one() -> None:
    assert typed([("Hello World", "Person")]) == {}  # words of prose, no name at all
    assert typed([("Tom Christie", "Person"), ("JSON", "Person")])["JSON"] == UNKNOWN_LABEL  # an acronym


def test_fragments_colours_addresses_and_versions_are_junk() -> None:
    cues = Cues.of([DOC])
    for junk in ("dispatch(self", "State(TypedDict", "1rem 2rem", "fff", "cd7f32", "127.0.0.1"):
        assert name_junk(junk, cues), junk
    for name in ("Tom Christie", "HTTP/2", "Python 3", "C++", "Encode", "uvicorn", "httpx", "Starlette v0.6.3"):
        assert not name_junk(name, cues), name


def test_names_in_backticks_become_technology_entities_and_variables_do_not() -> None:
    text = "Use `AsyncClient()` or `INT` from `httpx`, and pass `scope` along. Tom Christie wrote it.\n"
    text += "```\npip install httpx\n```\n"
    chunk = TextChunk(index=0, text=text, start=0, end=len(text))
    [hits] = type_hits([[chunk]], [hits_for(text, [("Tom Christie", "Person")])], DEFAULT_ONTOLOGY)
    assert {h.name: h.label for h in hits} == {
        "AsyncClient": "Technology",
        "INT": "Technology",
        "httpx": "Technology",
        "Tom Christie": "Person",
    }
    assert all(text[h.start : h.end] == h.name for h in hits)


def test_installed_and_imported_packages_are_known_by_their_lower_case_names() -> None:
    cues = Cues.of([DOC])
    assert {"starlette", "uvicorn", "httpx"} <= cues.packages
    assert "responses" not in cues.packages  # a module of a package, not a package


def test_a_user_ontology_gets_its_own_spelling_or_unknown() -> None:
    tools = Ontology(entities=(EntityType(label="Software"), EntityType(label="Person")))
    assert typed([("TestClient", "Person")], tools) == {"TestClient": "Software"}
    people = Ontology(entities=(EntityType(label="Person"),))
    assert typed([("TestClient", "Person")], people) == {"TestClient": "Person"}  # no label for code: the vote


def test_linked_projects_and_accounts_are_typed_by_their_link() -> None:
    text = (
        "Packages: [httpx-sse](https://github.com/florimondmanca/httpx-sse) streams events, and\n"
        "[Starlette Context](https://pypi.org/project/starlette-context/) keeps state. Thanks to\n"
        "[@adriangb](https://github.com/adriangb) for the review.\n"
    )
    chunk = TextChunk(index=0, text=text, start=0, end=len(text))
    [hits] = type_hits([[chunk]], [[]], DEFAULT_ONTOLOGY)
    assert {h.name: h.label for h in hits} == {
        "httpx-sse": "Technology",
        "Starlette Context": "Technology",
        "adriangb": "Person",
    }


def test_a_changelog_s_section_words_are_no_entities_but_names_in_sentences_are() -> None:
    text = "### Fixed\n\n* Support for proxies. We met Paris Hilton in Paris.\n"
    chunk = TextChunk(index=0, text=text, start=0, end=len(text))
    untyped = [("Fixed", UNKNOWN_LABEL), ("Support", UNKNOWN_LABEL), ("Paris Hilton", UNKNOWN_LABEL)]
    [hits] = type_hits([[chunk]], [hits_for(text, untyped)], DEFAULT_ONTOLOGY)
    assert [h.name for h in hits] == ["Paris Hilton"]  # "Paris" and "Hilton" are written as names


LICENCE = """Copyright (c) 2011, Encode OSS Ltd. Tom Christie wrote it.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES ARE DISCLAIMED. IN NO EVENT SHALL HOLDERS BE LIABLE FOR LOSS OF USE, DATA, OR
PROFITS; WHETHER IN CONTRACT OR TORT, EVEN IF ADVISED BY ENCODE OSS LTD.
"""


def test_english_words_on_a_line_in_capitals_are_no_entities() -> None:
    chunk = TextChunk(index=0, text=LICENCE, start=0, end=len(LICENCE))
    asked = [("AND", "Organization"), ("LOSS OF USE", "Organization"), ("WHETHER IN CONTRACT", "Organization")]
    names = [("Encode OSS Ltd", "Organization"), ("Tom Christie", "Person"), *asked]
    [hits] = type_hits([[chunk]], [hits_for(LICENCE, names)], DEFAULT_ONTOLOGY)
    found = {h.name: h.label for h in hits}
    assert not set(found) & {name for name, _ in asked}
    assert found["Encode OSS Ltd"] == "Organization" and found["Tom Christie"] == "Person"
    # The capitals of those lines are not taken as names written mid-sentence either.
    cues = Cues.of([LICENCE])
    assert "HOLDERS" not in cues.capitalised and "CONTRIBUTORS" not in cues.capitalised
    assert not name_junk("Encode", cues)
