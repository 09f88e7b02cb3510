"""Citation checking: marker parsing, invalid numbers, grounded, and the literal claim checks."""

from __future__ import annotations

import pytest

from evigraph.evidence.citations import check_citations, parse_citations
from evigraph.evidence.ledger import EvidenceLedger

ALICE = "Annual report\nAlice Smith works at Corvane Systems. Revenue was 2.8 million in 2023, up 12%, with two plants."


@pytest.fixture
def ledger() -> EvidenceLedger:
    led = EvidenceLedger()
    assert led.record("chunk-1", "retrieve", "passage", ALICE) == 1
    assert led.record("entity-globex", "retrieve", "entity", "Globex Company A rival that leads planning") == 2
    assert led.record("rel-1", "retrieve", "relation", "Corvane Systems SHIPS Anvils: shipped 1,200 anvils") == 3
    return led


def missing_of(answer: str, ledger: EvidenceLedger) -> list[str]:
    check = check_citations(answer, ledger)
    assert check.cited, "the test answer must cite valid evidence"
    return [m for u in check.unsupported for m in u["missing"]]


# --- markers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Acme [3].", [3]),
        ("Acme [1, 4].", [1, 4]),
        ("Acme [1,4].", [1, 4]),
        ("Acme [ 2 ].", [2]),
        ("Acme [1-3].", [1, 2, 3]),
        ("Acme [1 – 3].", [1, 2, 3]),
        ("Acme [1-3, 7].", [1, 2, 3, 7]),
    ],
)
def test_marker_forms(text: str, numbers: list[int]) -> None:
    [(span, got)] = parse_citations(text)
    assert got == numbers
    assert text[span[0]] == "[" and text[span[1] - 1] == "]"


def test_non_markers_are_ignored() -> None:
    text = "See [a], [link](http://x/1) and a footnote[^1], then [2]: http://ref on its own line.\n[5]: http://def"
    assert [nums for _, nums in parse_citations(text)] == [[2]]


def test_reversed_or_huge_range_is_not_expanded(ledger: EvidenceLedger) -> None:
    assert [n for _, n in parse_citations("A [3-1] B [1-51] C [1-50]")] == [[], [], list(range(1, 51))]
    check = check_citations("Alice Smith works at Corvane Systems [1] [3-1].", ledger)
    assert check.invalid == [1, 3]  # the refused range's ends are reported, not cited through it
    assert check.cited == [1]
    assert check.answer == "Alice Smith works at Corvane Systems [1]."


# --- invalid numbers and grounded ----------------------------------------------------------------


def test_invalid_numbers_are_removed_from_the_answer(ledger: EvidenceLedger) -> None:
    check = check_citations("Alice Smith works at Corvane Systems [1, 9]. Globex is a rival [99] [2].", ledger)
    assert check.invalid == [9, 99]
    assert check.cited == [1, 2]
    assert check.answer == "Alice Smith works at Corvane Systems [1]. Globex is a rival [2]."


def test_range_with_invalid_members_keeps_only_valid_ones(ledger: EvidenceLedger) -> None:
    check = check_citations("Corvane Systems ships anvils [2-5].", ledger)
    assert check.invalid == [4, 5]
    assert check.answer == "Corvane Systems ships anvils [2, 3]."


def test_fully_invalid_marker_is_removed_with_its_space(ledger: EvidenceLedger) -> None:
    check = check_citations("[7] Alice is at Corvane Systems [1]. Globex [8] is a rival [2].", ledger)
    assert check.answer == "Alice is at Corvane Systems [1]. Globex is a rival [2]."


def test_grounded_when_citing_real_evidence(ledger: EvidenceLedger) -> None:
    check = check_citations("Alice Smith works at Corvane Systems [1].", ledger)
    assert check.grounded
    assert check.sources == [{"n": 1, "tool": "retrieve", "kind": "passage", "content": ALICE}]


def test_not_grounded_without_any_citation(ledger: EvidenceLedger) -> None:
    assert not check_citations("Alice Smith works at Corvane Systems.", ledger).grounded


def test_not_grounded_when_only_invalid_numbers(ledger: EvidenceLedger) -> None:
    check = check_citations("Alice Smith works at Corvane Systems [42].", ledger)
    assert not check.grounded and check.cited == [] and check.invalid == [42]


def test_not_grounded_when_one_sentence_cites_only_invalid_numbers(ledger: EvidenceLedger) -> None:
    check = check_citations("Alice Smith works at Corvane Systems [1]. Globex is a rival [42].", ledger)
    assert check.cited == [1]
    assert not check.grounded


def test_evicted_and_dropped_numbers_are_invalid(ledger: EvidenceLedger) -> None:
    ledger.drop([2])
    check = check_citations("Globex is a rival [2].", ledger)
    assert check.invalid == [2] and not check.grounded


def test_claim_warnings_do_not_change_grounded(ledger: EvidenceLedger) -> None:
    check = check_citations("Initech made 999 anvils [3].", ledger)
    assert check.unsupported and check.grounded


def test_trailing_marker_after_full_stop_belongs_to_its_sentence(ledger: EvidenceLedger) -> None:
    check = check_citations("Revenue was 2.8 million. [1]", ledger)
    assert check.uncited == [] and check.unsupported == [] and check.grounded


# --- figures -------------------------------------------------------------------------------


def test_figure_present_in_evidence(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue was 2.8 million in 2023, up 12% [1].", ledger) == []


def test_figure_absent_from_evidence(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue was 3.1 million [1].", ledger) == ["3.1"]


def test_number_word_does_not_support_a_digit(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue came from 2 plants [1].", ledger) == ["2"]


def test_trailing_zeros_do_not_matter(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue was 2.80 million [1].", ledger) == []
    assert missing_of("Revenue was 2.81 million [1].", ledger) == ["2.81"]


def test_thousands_separator_and_year(ledger: EvidenceLedger) -> None:
    assert missing_of("Corvane Systems shipped 1200 anvils [3].", ledger) == []
    assert missing_of("Corvane Systems shipped 1,200 anvils in 2023 [3].", ledger) == ["2023"]


def test_figure_must_be_in_the_cited_evidence_not_other_evidence(ledger: EvidenceLedger) -> None:
    assert missing_of("Corvane Systems shipped 1,200 anvils [1].", ledger) == ["1,200"]


# --- names ---------------------------------------------------------------------------------


def test_name_needs_every_word_of_three_or_more_letters(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue went to Corvane Systems [1].", ledger) == []
    assert missing_of("Revenue went to Corvane Labs [1].", ledger) == ["Corvane Labs"]


def test_name_words_match_whole_words_only(ledger: EvidenceLedger) -> None:
    # "Ann" occurs inside "Annual" and "planning", never as a word of its own
    assert missing_of("Revenue was reviewed by Ann [1, 2].", ledger) == ["Ann"]


def test_name_match_ignores_case(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue was in the Annual Report [1].", ledger) == []


def test_lone_surname_needs_support(ledger: EvidenceLedger) -> None:
    assert missing_of("Revenue was reported by Smith [1].", ledger) == []
    assert missing_of("Revenue was reported by Jones [1].", ledger) == ["Jones"]


def test_sentence_initial_opener_is_not_checked(ledger: EvidenceLedger) -> None:
    # "However" and "The" are not in the evidence, yet they are openers, not names
    assert missing_of("However, Globex is a rival [2].", ledger) == []
    assert missing_of("The Globex rival leads planning [2].", ledger) == []


def test_sentence_initial_word_alone_is_not_checked(ledger: EvidenceLedger) -> None:
    assert missing_of("Sales were 2.8 million [1].", ledger) == []


def test_initial_word_checked_when_it_starts_a_run(ledger: EvidenceLedger) -> None:
    assert missing_of("Corvane Systems ships anvils [3].", ledger) == []
    assert missing_of("Corvane Robotics ships anvils [3].", ledger) == ["Corvane Robotics"]


def test_initial_word_checked_when_sentence_names_something_else(ledger: EvidenceLedger) -> None:
    assert missing_of("Initech acquired Globex [2].", ledger) == ["Initech"]
    assert missing_of("Initech acquired it [2].", ledger) == []  # alone, the first word is not checked


# --- uncited and graph-lacks sentences -------------------------------------------------------


def test_uncited_sentence_with_figure_or_name(ledger: EvidenceLedger) -> None:
    check = check_citations("Alice Smith works at Corvane Systems [1]. Revenue was 9 million. It is fine.", ledger)
    assert check.uncited == ["Revenue was 9 million."]
    check = check_citations("Revenue grew [1]. It went to Corvane Systems.", ledger)
    assert check.uncited == ["It went to Corvane Systems."]


def test_list_numbers_are_not_figures(ledger: EvidenceLedger) -> None:
    check = check_citations("1. Alice Smith works at Corvane Systems [1].\n2. Globex is a rival [2].", ledger)
    assert check.uncited == [] and check.unsupported == []


@pytest.mark.parametrize(
    "sentence",
    [
        "The graph does not say who founded Globex.",
        "No evidence mentions the founder of Globex.",
        "The knowledge base has no information about Initech.",
        "None of the sources say when Corvane Systems opened in 1999.",
        "The lookup for Initech returned nothing.",
        "I could not find who founded Globex.",
        "The founder of Globex is not mentioned in the retrieved passages.",
    ],
)
def test_graph_lacks_sentence_needs_no_citation(ledger: EvidenceLedger, sentence: str) -> None:
    check = check_citations(f"Alice Smith works at Corvane Systems [1]. {sentence}", ledger)
    assert check.uncited == []
    assert check.grounded


def test_negative_world_claim_still_needs_a_citation(ledger: EvidenceLedger) -> None:
    check = check_citations("Alice Smith works at Corvane Systems [1]. Globex does not provide pensions.", ledger)
    assert check.uncited == ["Globex does not provide pensions."]
    check = check_citations(
        "Alice Smith works at Corvane Systems [1]. The energy sources of Globex do not include coal.", ledger
    )
    assert check.uncited == ["The energy sources of Globex do not include coal."]
