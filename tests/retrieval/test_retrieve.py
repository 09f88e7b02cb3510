"""Retrieval on a small real corpus in the real embedded database: every path, fusion, budgets."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from evigraph import ConfigurationError, KnowledgeBase
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.models import (
    ExtractedEntity,
    ExtractedRelation,
    GraphData,
    Mention,
    Ontology,
    Span,
    TextChunk,
)
from evigraph.providers.embedders import Embedder
from evigraph.providers.tokenizers import default_tokenizer

NAMES = {
    "Zorvath Industries": "Organization",
    "Kellan Marsh": "Person",
    "Quillon Bridge": "Product",
    "Vetra River": "Location",
    "Oskar Lind": "Person",
    "Brightwater Labs": "Organization",
}

DOCS = {
    "hire": "Zorvath Industries hired Kellan Marsh in 1999 as chief engineer.",
    "bridge": "Kellan Marsh designed the Quillon Bridge after years of study.",
    "river": "The Quillon Bridge spans the Vetra River near the old mill.",
    "noise": "Oskar Lind founded Brightwater Labs to study soil chemistry in 2004.",
}


class KnownNames(ExtractionStrategy):
    """A deterministic extractor for the test corpus: known names, co-occurrence relations."""

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        entities, mentions, relations = [], [], []
        for c in chunks:
            found = []
            for name, label in NAMES.items():
                for m in re.finditer(re.escape(name), c.text):
                    e = ExtractedEntity.create(name, label)
                    entities.append(e)
                    mentions.append(
                        Mention(entity_id=e.id, chunk_index=c.index, spans=(Span(start=m.start(), end=m.end()),))
                    )
                    found.append((m.start(), e.id))
            ids = [eid for _, eid in sorted(found)]
            relations += [
                ExtractedRelation(source=a, target=b, fact=c.text, confidence=0.5, chunk_indexes=(c.index,))
                for a, b in itertools.pairwise(ids)
            ]
        return GraphData(entities=tuple(entities), relations=tuple(relations), mentions=tuple(mentions))


class HashEmbedder(Embedder):
    """Bag of hashed words: a user-written embedder, deterministic and offline."""

    dimension = 64

    def __init__(self, name: str = "test-hash-64") -> None:
        self.name = name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in re.findall(r"\w+", text.lower()):
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


@pytest.fixture
async def kb(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with KnowledgeBase(tmp_path / "kb.db", extractor=KnownNames()) as kb:
        for key, text in DOCS.items():
            report = await kb.ingest(text=text, key=key)
            assert report.ok
        yield kb


async def test_two_hop_relation_comes_back_through_links(kb: KnowledgeBase) -> None:
    question = "What did the engineer hired by Zorvath Industries design?"
    result = await kb.retrieve(question, expand_hops=2, top_k=5)
    hops = {(r.source, r.target): r.hop for r in result.relations}
    assert hops.get(("Zorvath Industries", "Kellan Marsh")) == 1
    assert hops.get(("Kellan Marsh", "Quillon Bridge")) == 2
    bridge = next(p for p in result.passages if p.source.document_key == "bridge")
    assert "links" in bridge.paths  # reached through the graph, not by its words
    one_hop = await kb.retrieve(question, expand_hops=1, top_k=5)
    assert ("Kellan Marsh", "Quillon Bridge") not in {(r.source, r.target) for r in one_hop.relations}


async def test_passages_path_alone_returns_no_entities(kb: KnowledgeBase) -> None:
    result = await kb.retrieve("Who founded Brightwater Labs?", paths=["passages"])
    assert result.entities == [] and result.relations == [] and result.facts == []
    assert result.passages[0].source.document_key == "noise"
    assert result.passages[0].paths == ["passages"]


async def test_exact_and_fuzzy_names(kb: KnowledgeBase) -> None:
    exact = await kb.retrieve("Tell me about Oskar Lind", paths=["exact_names"])
    assert [e.name for e in exact.entities] == ["Oskar Lind"]
    assert exact.entities[0].paths == ["exact_names"]
    fuzzy = await kb.retrieve("Brightwater", paths=["fuzzy_names"])
    assert "Brightwater Labs" in [e.name for e in fuzzy.entities]
    assert all(e.paths == ["fuzzy_names"] for e in fuzzy.entities)


async def test_facts_match_question_terms(kb: KnowledgeBase) -> None:
    result = await kb.retrieve("Which river does the Quillon Bridge span?", paths=["facts"])
    assert result.facts and "Vetra River" in result.facts[0].fact


async def test_numbers_are_searchable(kb: KnowledgeBase) -> None:
    result = await kb.retrieve("what happened in 2004", paths=["passages"], top_k=1)
    assert result.passages[0].source.document_key == "noise"


async def test_every_item_is_numbered_once(kb: KnowledgeBase) -> None:
    result = await kb.retrieve("Zorvath Industries Kellan Marsh Quillon Bridge", expand_hops=3)
    items = [i for section in (result.passages, result.entities, result.relations, result.facts) for i in section]
    number_of = {i.evidence_id: i.n for i in items}
    # One number per piece of evidence, from 1, no gaps.
    assert all(number_of[i.evidence_id] == i.n for i in items)
    assert sorted(number_of.values()) == list(range(1, len(number_of) + 1))
    assert len(items) == len(number_of)  # and each piece of evidence listed once


async def test_a_relation_found_by_links_and_facts_is_listed_once_as_a_relation(kb: KnowledgeBase) -> None:
    question = "Zorvath Industries Kellan Marsh Quillon Bridge"
    facts_only = await kb.retrieve(question, expand_hops=3, paths=["facts"])
    both = await kb.retrieve(question, expand_hops=3)
    assert facts_only.facts and all(f.paths == ["facts"] for f in facts_only.facts)
    relations = {r.id: r for r in both.relations}
    shared = [f.id for f in facts_only.facts if f.id in relations]
    assert shared, "the corpus states each relation in a passage the facts path reads"
    assert all(relations[rid].paths == ["facts", "links"] for rid in shared)  # the richer form, marked by both
    assert not {f.id for f in both.facts} & set(relations)
    assert all(f.paths == ["facts"] for f in both.facts)
    assert all(r.paths == ["links"] for r in both.relations if r.id not in shared)
    dumped = both.model_dump_json()
    assert all(dumped.count(f'"evidence_id":"relation:{rid}"') == 1 for rid in shared)


@pytest.mark.parametrize("budget", [40, 80, 150, 400, 2000])
async def test_context_puts_whole_passages_first(kb: KnowledgeBase, budget: int) -> None:
    result = await kb.retrieve("Zorvath Industries Kellan Marsh Quillon Bridge", expand_hops=3, top_k=10)
    assert result.passages and result.entities and result.relations
    text = result.to_context(budget)
    assert default_tokenizer().count(text) <= budget
    passages_cut = "## Passages" not in text or "more omitted)" in text.split("## Entities")[0]
    if passages_cut:  # while passages are cut, nothing else takes their room
        assert not any(s in text for s in ("## Entities", "## Relations", "## Facts"))
    if budget >= 80:
        assert "## Passages" in text
    if budget == 2000:
        assert not passages_cut
        assert all(f"[{p.n}]" in text for p in result.passages)
    numbers = [line.split("]", 1)[0] for line in text.splitlines() if line.startswith("[")]
    assert len(numbers) == len(set(numbers))  # a relation that is also a fact shows once


async def test_context_shows_only_what_adds_to_the_passages(kb: KnowledgeBase) -> None:
    result = await kb.retrieve("Zorvath Industries Kellan Marsh Quillon Bridge", expand_hops=3, top_k=10)
    text = result.to_context(4000)
    shown = {p.id for p in result.passages}
    for r in result.relations:
        repeats = r.type == "RELATED_TO" and bool(set(r.passages) & shown)
        assert (f"[{r.n}] " in text) != repeats, r
    assert any(r.type == "RELATED_TO" and f"[{r.n}] " not in text for r in result.relations)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"paths": ["teleport"]}, "paths"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 51}, "top_k"),
        ({"expand_hops": 6}, "expand_hops"),
    ],
)
async def test_bad_arguments_are_refused(kb: KnowledgeBase, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        await kb.retrieve("Kellan Marsh", **kwargs)  # type: ignore[arg-type]


async def test_vectors_find_passages_and_other_models_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor=KnownNames(), embedder=HashEmbedder()) as kb:
        for key, text in DOCS.items():
            await kb.ingest(text=text, key=key)
        result = await kb.retrieve("mill near old spans", paths=["passages"], top_k=2)
        assert result.passages[0].source.document_key == "river"
        assert "semantic" in result.passages[0].scores
    async with KnowledgeBase(db, embedder=HashEmbedder("other-model")) as other:
        with pytest.raises(ConfigurationError, match="embedded with 'test-hash-64'") as info:
            await other.retrieve("Kellan Marsh")
        assert "reembed" in info.value.hint
        with pytest.raises(ConfigurationError, match="embedded with 'test-hash-64'"):
            await other.ingest(text="Another note about Kellan Marsh.", key="new")
        assert (await other.status()).documents == 4  # nothing was written
        assert await other.reembed() == 4
        again = await other.retrieve("mill near old spans", paths=["passages"], top_k=2)
        assert "semantic" in again.passages[0].scores


async def test_items_carry_their_document_location(kb: KnowledgeBase) -> None:
    result = await kb.retrieve("What did the engineer hired by Zorvath Industries design?", expand_hops=2)
    assert all(p.source.title for p in result.passages)
    located = [e for e in result.entities if e.location is not None]
    assert located and all(e.location and e.location.document_key in DOCS for e in located)
    assert all(r.location is not None and r.location.document_key in DOCS for r in result.relations)
    keys = set(_keys(result.model_dump()))
    assert "embedding" not in keys and not any(k.startswith("_") for k in keys)


def _keys(value: object) -> list[str]:
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in (k, *_keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


async def test_an_embedder_added_after_an_ingest_without_one_retrieves_before_finalize(tmp_path: Path) -> None:
    """No vector exists yet (the graph ranking's sentence matrix is empty, of no dimension): the
    question is answered from what there is, and `finalize` then embeds."""
    note = "Marta Oliveira founded Harbor Lab in Lisbon. Ana Costa met Rui Pinto."
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
        assert (await kb.ingest(text=note, key="a", progress=False)).ok
    async with KnowledgeBase(tmp_path / "kb.db", embedder=HashEmbedder()) as kb:
        found = await kb.retrieve("Who founded Harbor Lab?")
        assert found.passages and "Harbor Lab" in found.passages[0].text
        assert (await kb.finalize()).embedded == 1
