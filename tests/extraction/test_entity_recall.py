"""Real entities no model finds and no capital marks: defined abbreviations, tools written in lower
case, dependency lists, sections spelled by their repository, names joined by "&", media types.
Each rule is also held to what it must not take."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.extraction.test_entity_structure import typed_text

from evigraph.ingest.extraction.abbreviations import _parenthesised, definitions
from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.entity_types import split_joined, type_hits
from evigraph.ingest.extraction.word_cues import coined
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import UNKNOWN_LABEL, TextChunk


@pytest.mark.parametrize(
    ("text", "short", "long"),
    [
        ("This release fixes a Denial of service (DoS) via uploads.", "DoS", "Denial of service"),
        ("It combines OOP (Object Oriented Programming) and more.", "OOP", "Object Oriented Programming"),
        ("using the power of **machine learning** (ML) to rank", "ML", "machine learning"),
        ("Allows consuming Server-Sent Events (SSE) with HTTPX.", "SSE", "Server-Sent Events"),
    ],
)
def test_an_abbreviation_defined_either_way_round_pairs_its_two_forms(text: str, short: str, long: str) -> None:
    [pair] = definitions(text)
    assert (pair.short.name, pair.long.name) == (short, long)
    assert text[pair.long.start : pair.long.end] == long and text[pair.short.start : pair.short.end] == short


@pytest.mark.parametrize(
    "text",
    [
        "Call the handler (see below) first.",
        "Build a Request(scope) object.",  # a call, no definition
        "It runs on Python (CPython) today.",  # CPython's letters are not Python's words in order
        "Open the Settings (UI) page.",  # a one-word long form abbreviates nothing
    ],
)
def test_a_parenthesis_that_defines_nothing_pairs_nothing(text: str) -> None:
    assert definitions(text) == []


_PLAIN = re.compile(r"([^()\n.;:!?]{2,200}?)[ \t]+\(([^()\n]{2,120})\)")
"""The definition's shape as one pattern: what `_parenthesised` finds from each parenthesis
backwards, in linear time where this pattern retries every start position."""

_PIECES = st.sampled_from(
    ["a", "b", "B", " ", "  ", "\t", "(", ")", ".", ";", "\n", "Denial of service ", "(DoS)", " (", "ML", "w" * 120]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
@example("It fixes a Denial of service (DoS); and OOP (Object Oriented Programming) too.")
@example("w" * 230 + " (ML) then a (b) (XY)")  # words cut at 200 characters back, parentheses in a row
def test_the_backward_scan_finds_what_the_plain_pattern_finds(text: str) -> None:
    found = [(at, before, m.start(1), m.group(1)) for at, before, m in _parenthesised(text)]
    assert found == [(m.start(1), m.group(1), m.start(2), m.group(2)) for m in _PLAIN.finditer(text)]


def test_both_forms_of_a_defined_abbreviation_are_entities_with_one_label() -> None:
    text = "This release fixes a Denial of service (DoS) in `multipart` parsing.\n"
    found = typed_text(text, [("Denial", UNKNOWN_LABEL), ("DoS", "Organization")])
    assert "Denial" not in found  # the piece of the long form the model found gives way to it
    assert found["Denial of service"] == found["DoS"] == "Concept"  # English words spelled out: an idea


@pytest.mark.parametrize("word", ["pytest", "docopt", "colorama", "stdin", "Cookiecutter"])
def test_a_word_no_lexicon_knows_is_coined(word: str) -> None:
    assert coined(word)


@pytest.mark.parametrize(
    "word", ["router", "Caching", "formatter", "serializer", "backends", "gotchas", "h11", "Support"]
)
def test_english_words_their_derivations_plurals_and_non_words_are_not_coined(word: str) -> None:
    assert not coined(word)


def test_a_tool_written_in_lower_case_is_software_and_an_english_word_in_lower_case_is_not() -> None:
    text = (
        "Fix test failures when using pytest on Windows. The helper predates modern pytest.\n"
        "Docopt, for instance, parses help pages. The upside of docopt is its syntax.\n"
        "Support for the router changed. We added support for retries, and support for streams.\n"
        "- Support is better now. Install with `uv`.\n"  # code: software docs
    )
    found = typed_text(
        text, [("pytest", "Person"), ("Docopt", "Person"), ("Support", UNKNOWN_LABEL), ("router", UNKNOWN_LABEL)]
    )
    assert found["pytest"] == found["Docopt"] == "Technology"  # no one's name is written in lower case
    assert "Support" not in found and "router" not in found


def test_a_list_a_lead_in_calls_libraries_names_software_and_a_list_of_arguments_does_not() -> None:
    text = (
        "The project relies on these excellent libraries:\n\n"
        "* `h11` - HTTP/1.1 support.\n"
        "* `rich` - Rich terminal support.\n\n"
        "Arguments:\n\n"
        "* `timeout` - how long to wait.\n"
        "* `verbose` - print more.\n"
    )
    found = typed_text(text)
    assert found.get("h11") == found.get("rich") == "Technology"  # "rich" is an English word, listed as a library
    assert "timeout" not in found and "verbose" not in found


def test_code_joined_by_and_to_a_package_is_one_and_a_python_keyword_is_none() -> None:
    text = "Support both `zlib` and `deflate` style encodings. Pass `None` or `True` and `quiet` flags.\n"
    found = typed_text(text)
    assert found.get("zlib") == found.get("deflate") == "Technology"
    assert not {"None", "True", "quiet"} & set(found)


def test_a_media_type_in_code_is_a_format() -> None:
    found = typed_text("Fixes a DoS via `multipart/form-data` requests; send `text/plain; charset=utf-8`.\n")
    assert found.get("multipart/form-data") == found.get("text/plain") == "Technology"


def test_a_heading_a_repository_link_spells_names_that_project_wherever_the_link_is() -> None:
    text = (
        "### Apiman\n\n"
        "An extension to integrate OpenAPI documents easily.\n\n"
        '<a href="https://github.com/strongbugman/apiman" target="_blank">GitHub</a>\n\n'
        "### rpc.py\n\n"
        "[Github](https://github.com/abersheeran/rpc.py) - [Documentation](https://example.org/rpc)\n\n"
        "### Usage notes\n\n"
        "Some prose about it.\n\n"
        "[GitHub](https://github.com/someone/unrelated) - [Docs](https://example.org/)\n"
    )
    found = typed_text(text)
    assert found.get("Apiman") == found.get("rpc.py") == "Technology"  # a file's shape, but the repository spells it
    assert "Usage notes" not in found  # a repository link further down that spells another name


def test_names_of_several_words_joined_by_an_ampersand_are_two_and_a_firm_of_two_surnames_is_one() -> None:
    text = "Serverless ASGI adapter for AWS Lambda & API Gateway.\n"
    start = text.index("AWS")
    hit = Hit(start, start + len("AWS Lambda & API Gateway"), "AWS Lambda & API Gateway", "Organization")
    assert [h.name for h in split_joined(hit)] == ["AWS Lambda", "API Gateway"]
    assert [text[h.start : h.end] for h in split_joined(hit)] == ["AWS Lambda", "API Gateway"]
    firm = Hit(0, len("Procter & Gamble"), "Procter & Gamble", "Organization")
    assert split_joined(firm) == [firm]


def test_a_versioned_protocol_name_and_a_standard_ending_a_sentence_are_whole() -> None:
    text = "Switch encoding from IDNA 2003 to IDNA 2008. Packages for OAuth1a and OAuth2 exist in `django`.\n"
    idna = [i for i in range(len(text)) if text.startswith("IDNA", i)]
    chunk = TextChunk(index=0, text=text, start=0, end=len(text))
    [hits] = type_hits([[chunk]], [[Hit(i, i + 4, "IDNA", "Organization") for i in idna]], DEFAULT_ONTOLOGY)
    found = {h.name: h.label for h in hits}
    assert {"IDNA 2003", "IDNA 2008", "OAuth1a", "OAuth2"} <= set(found)
