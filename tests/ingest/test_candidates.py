"""Blocking and name matching for resolution at finalize: the right pairs, and few of them."""

from __future__ import annotations

import itertools

import pytest

from evigraph.ingest.candidates import CANDIDATE_FLOOR, MAX_BLOCK, SMALL_BLOCK, Blocks, candidate_pairs
from evigraph.ingest.graph_resolution.fuzzy import FUZZY_THRESHOLD
from evigraph.ingest.name_match import QUALIFIED_SCORE, best_match, comparison_form, names_of
from evigraph.store.merging import EntityRecord

FIRST = [
    *("Amelia", "Bruno", "Carla", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas"),
    *("Kamal", "Lucia", "Marek", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sami", "Tomas"),
    *("Ulla", "Viktor", "Wanda", "Xavier", "Yara", "Zoltan", "Agnes", "Boris", "Celine", "Dario"),
]
LAST = [
    *("Abernathy", "Bergstrom", "Castellanos", "Delacroix", "Eriksen", "Fontaine", "Gutierrez", "Halvorsen"),
    *("Ivanova", "Jankowski", "Kowalczyk", "Lindqvist", "Moreau", "Nakamura", "Oyelaran", "Petrovic"),
    *("Quispe", "Rasmussen", "Sandoval", "Takahashi", "Umarov", "Valdivia", "Wojcik", "Xiong"),
    *("Yamamoto", "Zielinski", "Achterberg", "Brannigan", "Cavendish", "Dunleavy"),
]


def entities(names: list[str], label: str = "Person") -> list[EntityRecord]:
    return [EntityRecord(id=f"{label.lower()}:{comparison_form(n)}", name=n, label=label) for n in names]


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ("Chevrolet Colorado", "Chevroelt Colorado", "typo"),
        ("Marta Oliveira", "Marta Olivera", "typo"),
        ("J. Smith", "John Smith", "initials"),
        ("J. Robert Oppenheimer", "Robert Oppenheimer", "initials"),
        ("IBM", "International Business Machines", "acronym"),
        ("N.H.L.", "National Hockey League", "acronym"),
        ("Acme Corp", "Acme Corporation", "suffix"),
        ("Airbus SE", "Airbus", "suffix"),
        ("Beyoncé", "Beyonce", "same"),
        ("Coca-Cola", "Coca Cola", "same"),
    ],
)
def test_spellings_of_one_name_match_by_their_rule(a: str, b: str, reason: str) -> None:
    score, why = best_match(names_of(a), names_of(b))
    assert why == reason and score >= 0.85


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Back to the Future Part II", "Back to the Future Part III"),  # a number picks one of a series
        ("United States presidential election, 1960", "United States presidential election, 1964"),
        ("George I, Earl of March", "George II, Earl of March"),
        ("Warren Buffett", "The Warren Buffett Way"),  # an added word names another thing
        ("Alexander Henderson", "Alexander Henderson Jr."),
        ("Game", "Global Alliance in Management Education"),  # a word, not an acronym: not in capitals
        ("Cappy", "Dappy"),  # one letter apart, but at the start
        ("Ireland", "Iceland"),  # one word one letter off is as often another name
        ("U.S.", "United States"),  # two letters stand for too many names to merge on
        ("BC", "BC CCF"),  # two acronyms, not an expansion
    ],
)
def test_different_names_that_look_alike_do_not_match(a: str, b: str) -> None:
    score, _ = best_match(names_of(a), names_of(b))
    assert score < 0.85


def test_qualified_names_are_senses_not_spellings() -> None:
    """A document title's entity also has its name without the qualifier as an alias; that shared
    alias alone must not make the cocktail and the legend one thing."""
    cocktail = names_of("Bloody Mary (cocktail)", ["Bloody Mary"])
    legend = names_of("Bloody Mary (folklore)", ["Bloody Mary"])
    assert best_match(cocktail, legend) == (0.0, "qualifier")
    plain = names_of("Bloody Mary")  # may be either: a judge reading passages decides, names do not merge it
    assert best_match(cocktail, plain) == (QUALIFIED_SCORE, "qualifier")
    assert CANDIDATE_FLOOR <= QUALIFIED_SCORE < FUZZY_THRESHOLD


def test_blocking_compares_far_fewer_pairs_than_all_and_still_finds_the_variants() -> None:
    names = [f"{f} {last}" for f, last in itertools.product(FIRST, LAST)]  # 900 distinct people
    variants = ["Marek Lindqvst", "G. Halvorsen", "Ines Castelanos"]
    found = candidate_pairs(entities(names + variants))
    n = len(names) + len(variants)
    # Every first name and surname is shared by 30 people: those blocks are past SMALL_BLOCK, so
    # each member keeps only its nearest few, and the cost stays linear in n.
    assert found.compared < n * (n - 1) / 2 / 40, (found.compared, n)
    assert found.compared < 20 * n
    pairs = {(p.a, p.b): p for p in found.pairs}
    for variant, original in [
        ("Marek Lindqvst", "Marek Lindqvist"),
        ("G. Halvorsen", "Greta Halvorsen"),
        ("Ines Castelanos", "Ines Castellanos"),
    ]:
        key = tuple(sorted(("person:" + comparison_form(variant), "person:" + comparison_form(original))))
        assert key in pairs, (variant, original)
        assert pairs[key].score >= 0.85  # type: ignore[index]
    assert all(p.score >= CANDIDATE_FLOOR for p in found.pairs)
    assert [p.score for p in found.pairs] == sorted((p.score for p in found.pairs), reverse=True)


def test_name_vectors_add_neighbours_in_a_big_block_but_names_score_the_pairs() -> None:
    names = [f"Lindqvist {f}" for f in FIRST[: SMALL_BLOCK + 6]]  # one surname block past SMALL_BLOCK
    ents = entities(names)
    blocks = Blocks(ents)
    assert blocks.linked_ids() == sorted(e.id for e in ents)
    first, last = ents[0], ents[-1]  # "Lindqvist Amelia", "Lindqvist Tomas": far apart by characters
    without = {(p.a, p.b) for p in blocks.pairs(floor=0.0).pairs}
    assert tuple(sorted((first.id, last.id))) not in without
    # The vectors say those two are nearest each other: the pair is proposed, and scored by its names.
    vectors = {e.id: [1.0 if i == k else 0.0 for k in range(len(ents))] for i, e in enumerate(ents)}
    vectors[last.id] = [0.9, 0.1] + [0.0] * (len(ents) - 2)
    found = blocks.pairs(vectors, floor=0.0)
    near = next(p for p in found.pairs if {p.a, p.b} == {first.id, last.id})
    assert near.cosine is not None and near.cosine > 0.99 and near.score < 0.85
    assert found.compared < len(ents) * (len(ents) - 1) / 2


def test_pairs_around_new_names_are_the_full_graphs_pairs_that_touch_them() -> None:
    """`around` files only the blocks holding a new name and leaves out a key they push over
    `MAX_BLOCK`: the pairs must still be exactly those filing everything would give."""
    import random

    rng = random.Random(7)
    people = entities([f"{first} Abernathy" for first in FIRST])  # one block above SMALL_BLOCK
    towns = [f"{first}{last} University" for first, last in itertools.product(FIRST, LAST)]
    schools = entities(towns[: MAX_BLOCK + 5], "Organization")  # "university": above MAX_BLOCK
    new = [
        *entities(["Marta Abernathy", "Amelia Abernathi", "Bruno Abernathy"]),
        *entities(["ZoltanDunleavy University", "AmeliaAbernathy Universty"], "Organization"),
    ]
    new = [EntityRecord(id=f"new:{e.id}", name=e.name, label=e.label) for e in new]
    everyone = [*people, *schools, *new]
    vectors = {e.id: [rng.uniform(-1, 1) for _ in range(8)] for e in everyone}
    ids = {e.id for e in new}

    near = Blocks([*people, *schools]).around(new)
    got = near.pairs(vectors, touching=ids)
    full = Blocks(everyone).pairs(vectors)
    expected = [p for p in full.pairs if (p.a in ids) != (p.b in ids)]
    assert got.pairs == expected
    assert {(p.a, p.b) for p in got.pairs if p.reason == "typo"} == {
        ("new:organization:ameliaabernathy universty", "organization:ameliaabernathy university"),
        ("new:person:amelia abernathi", "person:amelia abernathy"),
    }
    assert near.skipped >= 1 and len(near.entities) < MAX_BLOCK  # "university"'s members not pulled in
    focus = {n for n, e in enumerate(near.entities) if e.id in ids}
    assert any(len(b) > SMALL_BLOCK and focus & set(b) for b in near.blocks)  # paired by nearest neighbours
