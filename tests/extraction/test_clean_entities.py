"""Issue 11's bar: a markdown page yields only clean entities, one label per name, with both extractors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evigraph.ingest.extraction import available_spacy_model
from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.entity_types import type_hits
from evigraph.ingest.extraction.names import clean_name_span, junk_reason, trim_span
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.kb import KnowledgeBase
from evigraph.models import UNKNOWN_LABEL, EntityType, Ontology, TextChunk, normalize_name

PAGE = """# Deploying Kuzu with Docker

Docker packages the Kuzu database so that Barack Obama and Angela Merkel could run it in Berlin.
See [the Docker guide](https://docs.docker.com/get-started/) or write to help@example.com.
Install it with `pip install evigraph` and call `KnowledgeBase.open()` from `src/evigraph/kb.py`.

## Supported systems

| System | Version | Maintainer |
|--------|---------|------------|
| **Ubuntu** | 22.04 | Canonical Ltd |
| Debian | 12 | Debian Project |
| Windows 11 | 10.0.22621 | Microsoft |

### Example

```python
from evigraph import KnowledgeBase
kb = KnowledgeBase("Docker_Image.db")
print(kb.status())  # Docker Hub, see https://hub.docker.com
```

- **Docker** runs on Ubuntu, made by Canonical Ltd in London.
- Read the README.md at https://github.com/example/evigraph for version v0.11.3.
- Angela Merkel met Docker engineers in Paris on 3 May 2019.
"""

JUNK = re.compile(r"[#*|`<>\[\]{}=_\\]|https?://|www\.|@\w|\(\)|\.md\b|\.py\b|/\w+/")

EXTRACTORS = [
    "rules",
    pytest.param("spacy", marks=pytest.mark.skipif(available_spacy_model() is None, reason="no spaCy")),
]


@pytest.mark.parametrize("extractor", EXTRACTORS)
async def test_markdown_page_gives_clean_names_with_one_label_each(tmp_path: Path, extractor: str) -> None:
    page = tmp_path / "deploy.md"
    page.write_text(PAGE, encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db", extractor=extractor) as kb:
        await kb.ingest([page], progress=False)
        rows = (await kb.cypher_query("MATCH (e:Entity) RETURN e.name AS name, e.label AS label", limit=1000)).rows
    names = [(str(r["name"]), str(r["label"])) for r in rows]
    assert names, "the page names people and places; an empty graph would pass vacuously"
    junk = [n for n, _ in names if JUNK.search(n) or junk_reason(n, numeric_ok=True) is not None]
    assert junk == []
    labels: dict[str, set[str]] = {}
    for name, label in names:
        labels.setdefault(normalize_name(name), set()).add(label)
    assert {n: ls for n, ls in labels.items() if len(ls) > 1} == {}
    found = {normalize_name(n) for n, _ in names}
    assert {"angela merkel", "ubuntu"} <= found  # real names inside markup survive, cleaned
    if extractor == "rules":
        assert "canonical ltd" in found  # a table cell is cleaned to its name, not dropped


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("**Docker**", "Docker"),
        ("## Install Kuzu", "Install Kuzu"),
        ("- Paris", "Paris"),
        ("1. Paris", "Paris"),
        ("> Oslo", "Oslo"),
        ("<b>Oslo</b>", "Oslo"),
        ("&nbsp;Oslo", "Oslo"),
        ("[Docker](https://docker.com)", "Docker"),
        ("**[Docker](https://x.org)**", "Docker"),
        ("`Kuzu`", "Kuzu"),
        ("| Canonical Ltd |", "Canonical Ltd"),
        ("the United States", "United States"),
    ],
)
def test_markup_around_a_name_is_peeled_off(raw: str, name: str) -> None:
    span = clean_name_span(raw, 0, len(raw))
    assert span is not None and raw[span[0] : span[1]] == name


@pytest.mark.parametrize(
    "name",
    [
        "Node.js",  # a capital next to the dot: a product name, while "index.js" is a file
        "ASP.NET",
        "U.S.",  # an abbreviation keeps its periods
        "St. Louis",
        "Washington D.C",  # ".c" is a C file only in lower case after a lower-case stem
        "J.R.R. Tolkien",
        "C++",  # "+" is never edge junk
        "C#",  # "#" is a heading marker only in front
        "Python 3",  # digits inside a name are fine
        "Windows 11",
        "TCP/IP",  # one slash between capitals is not a path
        "東京",
        "Москва",
        "محمد",
        "Barack\nObama",  # a name wrapped inside one paragraph
    ],
)
def test_real_names_survive(name: str) -> None:
    assert trim_span(name, 0, len(name)) == (0, len(name))
    assert junk_reason(name) is None


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("https://docs.docker.com", "url"),
        ("www.example.com", "url"),
        ("help@example.com", "e-mail"),
        ("src/evigraph", "path"),
        ("/usr/bin", "path"),
        ("C:\\Users", "path"),
        ("README.md", "file name"),
        ("index.js", "code or dotted identifier"),
        ("os.path", "code or dotted identifier"),
        ("e.g.", "abbreviation"),
        ("Docker_Image", "code or markup"),
        ("x = 1", "code or markup"),
        ("Docker** and **Kuzu", "code or markup"),
        ("Name | Age", "table or rule line"),
        ("---", "table or rule line"),
        ("v0.11.3", "version"),
        ("3.11", "number"),
        ("2019", "number"),
        ("The", "article"),
        ("Intro\n\n## Next", "crosses a block"),
        ("Intro\n| Name", "crosses a block"),
    ],
)
def test_junk_is_refused_with_its_reason(name: str, reason: str) -> None:
    assert junk_reason(name) == reason


def test_numbers_pass_only_where_typed_as_dates_or_amounts() -> None:
    assert junk_reason("1998", numeric_ok=True) is None
    assert junk_reason("$40", numeric_ok=True) is None
    assert junk_reason("12/03/2004", numeric_ok=True) is None
    assert junk_reason("10 a.m.", numeric_ok=True) is None  # a time, while "e.g." alone is refused
    assert junk_reason("| 1998 |", numeric_ok=True) == "table or rule line"


def test_a_call_is_code_even_when_the_identifier_alone_looks_like_a_name() -> None:
    text = "call FastAPI() now"
    assert clean_name_span(text, 5, 14) is None


def hit(name: str, label: str) -> Hit:
    return Hit(0, len(name), name, label)


def typed(per_chunk: list[list[Hit]], ontology: Ontology = DEFAULT_ONTOLOGY) -> dict[str, set[str]]:
    """Each name's labels after typing, over chunks whose text is just the name (no other cues)."""
    chunks = [
        TextChunk(index=i, text=" ".join(h.name for h in hits), start=0, end=1) for i, hits in enumerate(per_chunk)
    ]
    out: dict[str, set[str]] = {}
    for hits in type_hits([chunks], per_chunk, ontology):
        for h in hits:
            out.setdefault(h.name.casefold(), set()).add(h.label)
    return out


def test_majority_label_wins_and_unknown_does_not_vote() -> None:
    per_chunk = [[hit("Docker", "Organization")]] * 3 + [[hit("Docker", "Person")], [hit("Lincoln", "Person")]]
    per_chunk += [[hit("Lincoln", UNKNOWN_LABEL)]] * 4
    assert typed(per_chunk) == {"docker": {"Organization"}, "lincoln": {"Person"}}


def test_disagreement_gets_the_neutral_label_or_unknown() -> None:
    per_chunk = [[hit("Docker", label)] for label in ("Person", "Location", "Organization", "Person")]
    assert typed(per_chunk) == {"docker": {"Concept"}}  # 2 of 4 is no majority
    bare = Ontology(entities=(EntityType(label="Person"), EntityType(label="Location")))
    assert typed(per_chunk, bare) == {"docker": {UNKNOWN_LABEL}}


def test_a_possessive_after_a_space_leaves_no_trailing_space_in_the_id() -> None:
    """ "Sam Katzman ’s" once gave the id `person:sam katzman ` (trailing space), which FalkorDB's
    range index never finds by equality: its name vector was re-embedded forever."""
    from evigraph.models import ExtractedEntity, normalize_name

    assert normalize_name("Sam Katzman ’s") == normalize_name("Sam Katzman's") == "sam katzman"
    assert ExtractedEntity.create("Sam Katzman ’s", "Person").id == "person:sam katzman"
