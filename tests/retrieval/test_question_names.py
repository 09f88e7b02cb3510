"""Graph ranking's question names: stored names found exactly and longest first, names by shape
where no stored name is, common words never a seed."""

from __future__ import annotations

from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import normalize_name
from evigraph.retrieval.question_names import NamedSpan, question_names

STORED = ["of Montreal", "Montreal", "Harbour Lights Rising", "album", "Tallinn", "1930"]
KNOWN = {normalize_name(name): node for node, name in enumerate(STORED)}


def find(question: str, unusable: frozenset[int] = frozenset()) -> list[NamedSpan]:
    return question_names(question, KNOWN, lambda node: node not in unusable, DEFAULT_ONTOLOGY)


def spans(question: str, found: list[NamedSpan]) -> list[str]:
    assert all(question[n.start : n.end] == n.name for n in found)  # every name is its own span
    return [n.name for n in found]


def test_the_longest_stored_name_wins_and_an_article_is_left_out() -> None:
    question = "Which album did the band of Montreal record in 1930?"
    assert spans(question, find(question)) == ["of Montreal", "1930"]
    question = "Who directed The Harbour Lights Rising?"
    assert spans(question, find(question)) == ["Harbour Lights Rising"]


def test_a_common_word_some_passage_named_is_no_seed() -> None:
    question = "Which album came out first?"
    assert spans(question, find(question)) == []


def test_a_name_not_stored_is_found_by_its_shape() -> None:
    question = "Was Greta Lind born in Tallinn?"
    found = find(question)
    assert spans(question, found) == ["Greta Lind", "Tallinn"]
    assert KNOWN.get(normalize_name(found[0].name)) is None  # its vector, not an exact seed, stands for it


def test_a_stored_name_that_cannot_seed_is_left_to_the_shapes() -> None:
    question = "Was Greta Lind born in Tallinn?"
    tallinn = KNOWN[normalize_name("Tallinn")]
    assert spans(question, find(question, frozenset({tallinn}))) == ["Greta Lind", "Tallinn"]
    question = "Which album did the band of Montreal record?"  # "of Montreal" cannot seed; "Montreal" can
    assert spans(question, find(question, frozenset({KNOWN["of montreal"]}))) == ["Montreal"]


def test_a_question_without_names_has_none() -> None:
    assert find("what happened next?") == [] and find("") == []
