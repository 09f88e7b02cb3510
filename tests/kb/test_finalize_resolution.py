"""`kb.finalize(resolver=...)`: entities of the whole graph merged offline, on a real Kuzu file."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.ingest.test_candidates import FIRST, LAST

from evigraph.errors import ConfigurationError
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.kb import KnowledgeBase
from evigraph.models import ExtractedEntity, GraphData, Mention, Ontology, Span, TextChunk, entity_id
from evigraph.store.base import GraphStore

DOCS = {
    "a": "Marta Oliveira founded Harbor Lab in Lisbon in 2014. She hired Ana Costa.",
    "b": "Marta Olivera visited the Harbor Lab in Lisbon. Ana Costa met Rui Pinto there.",
}
MARTA, MARTA_TYPO = entity_id("Marta Oliveira", "Unknown"), entity_id("Marta Olivera", "Unknown")


async def ingest(kb: KnowledgeBase, docs: dict[str, str]) -> None:
    for key, text in docs.items():
        report = await kb.ingest(text=text, key=key, progress=False)
        assert report.ok


def opened(kb: KnowledgeBase) -> GraphStore:
    assert kb.store is not None
    return kb.store


async def passages_naming(kb: KnowledgeBase, entity: str) -> set[str]:
    chunks = dict.fromkeys(c for _, c in await opened(kb).passages_for_entities([entity], per_entity=50))
    return {c.document for c in await opened(kb).passages_by_ids(list(chunks))}


async def test_fuzzy_merges_two_spellings_and_keeps_their_mentions(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await ingest(kb, DOCS)
        assert await passages_naming(kb, MARTA) == {"a"} and await passages_naming(kb, MARTA_TYPO) == {"b"}
        before = (await kb.status()).entities

        report = await kb.finalize(resolver="fuzzy")

        r = report.resolution
        assert r is not None and r.resolver == "fuzzy"
        assert (r.candidates, r.confirmed, r.merged, r.llm) == (1, 1, 1, None)
        assert [(m.name, m.names) for m in r.merges] == [("Marta Oliveira", ["Marta Olivera"])]
        assert r.mentions_moved == 1 and r.relations_moved > 0
        assert (await kb.status()).entities == before - 1
        assert await passages_naming(kb, MARTA) == {"a", "b"}  # both spellings' mentions, on the survivor
        assert await opened(kb).entities_by_ids([MARTA_TYPO]) == []
        records = {e.id: e for e in await opened(kb).entity_records()}
        assert {"Marta Oliveira", "Marta Olivera"} <= set(records[MARTA].aliases)
        found = await kb.search_entities("Marta Olivera")
        assert [e.id for e in found.hits][:1] == [MARTA]
        assert (await kb.check()).found == []

        # A later document naming the merged-away spelling attaches to the survivor.
        await ingest(kb, {"c": "Marta Olivera spoke in Porto."})
        assert await opened(kb).entities_by_ids([MARTA_TYPO]) == []
        assert await passages_naming(kb, MARTA) == {"a", "b", "c"}
        again = await kb.finalize(resolver="fuzzy")
        assert again.resolution is not None and again.resolution.merged == 0


async def test_exact_is_the_default_and_merges_nothing(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await ingest(kb, DOCS)
        report = await kb.finalize()
        assert report.resolution is not None
        assert (report.resolution.resolver, report.resolution.candidates, report.resolution.merged) == ("exact", 0, 0)
        assert await opened(kb).entities_by_ids([MARTA_TYPO]) != []
        assert report.themes >= 1


async def test_an_unknown_resolver_is_refused_with_the_choices_before_any_work(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb.db", extractor="rules")
    async with kb:
        with pytest.raises(ConfigurationError) as info:
            await kb.finalize(resolver="sloppy")
        assert "unknown resolver 'sloppy'" in str(info.value)
        assert info.value.hint == "use one of: exact, fuzzy, llm"
        with pytest.raises(ConfigurationError, match="the llm resolver needs an LLM") as needs:
            await kb.finalize(resolver="llm")
        assert "--llm" in needs.value.hint and "--resolver fuzzy" in needs.value.hint
    assert not (tmp_path / "kb.db").exists()  # refused before the knowledge base was created


async def test_blocking_cost_grows_with_candidates_not_with_all_pairs(tmp_path: Path) -> None:
    people = [f"{f} {s}" for f, s in itertools.product(FIRST, LAST)]  # 900 distinct names
    docs = {f"d{i}": " ".join(f"{p} met {q}." for p, q in itertools.pairwise(people[i::10])) for i in range(10)}
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await ingest(kb, docs)
        report = await kb.finalize(resolver="fuzzy")
    r = report.resolution
    assert r is not None and r.entities >= len(people)
    all_pairs = r.entities * (r.entities - 1) // 2
    assert r.compared * 40 < all_pairs, (r.compared, all_pairs)
    assert r.candidates <= r.compared and r.merged == 0  # all distinct people


class Gazetteer(ExtractionStrategy):
    """Typed names found where they are written: the offline extractors type too loosely for a
    test about labels."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        entities, mentions = {}, []
        for chunk in chunks:
            for name, label in self.names.items():
                for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", chunk.text):
                    entity = ExtractedEntity.create(name, label)
                    entities[entity.id] = entity
                    span = Span(start=m.start(), end=m.end())
                    mentions.append(Mention(entity_id=entity.id, chunk_index=chunk.index, spans=(span,)))
        return GraphData(entities=tuple(entities.values()), mentions=tuple(mentions))


async def test_an_acronym_merges_only_where_a_passage_spells_it_out(tmp_path: Path) -> None:
    org = "Organization"
    gazetteer = Gazetteer({"National Hockey League": org, "NHL": org, "RCA": org, "Russian Constituent Assembly": org})
    docs = {
        "a": "The National Hockey League (NHL) was founded in 1917.",
        "b": "The NHL expanded to Seattle.",
        "c": "RCA signed the band in 1956.",
        "d": "The Russian Constituent Assembly met in 1918.",
    }
    async with KnowledgeBase(tmp_path / "kb.db", extractor=gazetteer) as kb:
        await ingest(kb, docs)
        report = await kb.finalize(resolver="fuzzy")
    r = report.resolution
    assert r is not None and r.candidates == 2  # both pairs are proposed, as acronyms
    assert [(m.name, m.names) for m in r.merges] == [("NHL", ["National Hockey League"])]  # the better attested
