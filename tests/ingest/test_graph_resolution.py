"""Judging, clustering and survivors at finalize, apart from any store."""

from __future__ import annotations

from evigraph.ingest.candidates import CandidatePair
from evigraph.ingest.graph_resolution import FuzzyGraphResolution, Judgement
from evigraph.ingest.graph_resolution.base import ExactGraphResolution, labels_compatible, plan_merges
from evigraph.ingest.graph_resolution.passages import NoPassages, cut_around
from evigraph.store.merging import EntityMerge, EntityRecord


def record(eid: str, name: str, label: str = "Person", mentions: int = 1) -> EntityRecord:
    return EntityRecord(id=eid, name=name, label=label, aliases=(name,), mentions=mentions)


def pair(a: str, b: str, score: float = 0.9, reason: str = "chars") -> CandidatePair:
    return CandidatePair(a=min(a, b), b=max(a, b), score=score, reason=reason)


def test_a_confirmed_chain_stops_at_a_pair_judged_different() -> None:
    entities = {e.id: e for e in (record("a", "Jon Smith"), record("b", "John Smith"), record("c", "Joan Smith"))}
    judged = Judgement(same=[pair("a", "b"), pair("b", "c")], different=[pair("a", "c")])
    assert ExactGraphResolution().clusters(judged, entities) == [["a", "b"]]


def test_fuzzy_joins_groups_only_when_every_member_matches() -> None:
    names = ["John Smith", "Jon Smith", "Jon Smyth", "Jan Smyth"]  # each one typo from the next
    entities = {str(i): record(str(i), n) for i, n in enumerate(names)}
    fuzzy = FuzzyGraphResolution()
    chain = [pair(str(i), str(i + 1), 0.92, "typo") for i in range(3)]
    assert fuzzy.clusters(Judgement(same=chain), entities) == [["0", "1"], ["2", "3"]]


async def test_fuzzy_merges_initials_only_when_they_expand_one_way() -> None:
    entities = {e.id: e for e in (record("j", "J. Smith"), record("john", "John Smith"), record("jane", "Jane Smith"))}
    pairs = [pair("j", "john", 0.93, "initials"), pair("j", "jane", 0.93, "initials")]
    judged = await FuzzyGraphResolution().judge(pairs, entities, NoPassages())
    assert judged.same == [] and len(judged.different) == 2
    alone = {k: v for k, v in entities.items() if k != "jane"}
    judged = await FuzzyGraphResolution().judge(pairs[:1], alone, NoPassages())
    assert judged.same == pairs[:1]


def test_labels_of_one_family_may_merge_others_never() -> None:
    assert labels_compatible("Organization", "Company") and labels_compatible("Product", "Technology")
    assert labels_compatible("Person", "Unknown")
    assert not labels_compatible("Person", "Location") and not labels_compatible("Organization", "Product")


def test_the_typed_better_attested_fuller_entity_survives() -> None:
    entities = {
        e.id: e
        for e in (
            record("j", "J. Smith", mentions=5),
            record("john", "John Smith", mentions=5),
            record("u", "John Smith", "Unknown", mentions=9),
        )
    }
    assert plan_merges([["j", "john", "u"]], entities) == [EntityMerge(survivor="john", merged=("j", "u"))]


def test_a_snippet_is_cut_around_the_name() -> None:
    text = "Filler words come first. " * 10 + "Then Marta Olivera visited the lab in Lisbon. " + "More text. " * 20
    snippet = cut_around(text, ["Marta Olivera"], width=80)
    assert "Marta Olivera visited" in snippet and snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) <= 82
