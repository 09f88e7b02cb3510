"""A reply whose first line is longer than the whole budget still shows its start, cut and marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase, Toolkit
from evigraph.evidence.pack import Section, pack_sections
from evigraph.providers.tokenizers import default_tokenizer
from evigraph.retrieval.schema import EntityTypeView
from evigraph.tools.graph_tools import OntologyResult


def test_a_header_longer_than_the_budget_is_cut_at_a_word() -> None:
    header = "Entity types: " + "; ".join(f"Type{i} (a kind of thing)" for i in range(200))
    text = pack_sections([], 120, len, header=header)
    assert 0 < len(text) <= 120
    assert text.startswith("Entity types: Type0 (a kind of thing);") and text.endswith(" …")
    assert header.startswith(text[: -len(" …")])


def test_a_single_word_longer_than_the_budget_is_cut_inside_it() -> None:
    assert pack_sections([], 20, len, header="x" * 500) == "x" * 18 + " …"
    assert pack_sections([], 1, len, header="x" * 500) == "x"  # no room for the mark


def test_the_cut_header_keeps_the_budget_with_sections_and_in_tokens() -> None:
    header = "Relation types: " + " ".join(f"KNOWS_{i}" for i in range(400))
    sections = [Section("Passages", [f"passage {i} " * 20 for i in range(5)])]
    text = pack_sections(sections, 200, len, header=header)
    assert 0 < len(text) <= 200 and text.startswith("Relation types: KNOWS_0")
    count = default_tokenizer().count
    in_tokens = pack_sections(sections, 30, count, header=header)
    assert in_tokens.startswith("Relation types:") and 0 < count(in_tokens) <= 30


@pytest.mark.parametrize("max_chars", [300, 2000])
def test_a_get_ontology_reply_larger_than_the_budget_renders_its_first_lines(max_chars: int) -> None:
    described = "a described kind of thing, with what it covers and what it does not " * 3
    result = OntologyResult(
        entity_types=[EntityTypeView(label=f"Type{i}", description=described, count=i) for i in range(80)],
        relation_types=[],
        tables=[],
        cypher_guide="MATCH (e:Entity) RETURN e.name",
    )
    text = result.to_llm_text(max_chars)
    assert 0 < len(text) <= max_chars
    assert "Entity types: Type0 (0): a described kind of thing" in text and text.endswith("…")


async def test_get_ontology_through_the_toolkit_renders_its_first_lines_past_the_budget(tmp_path: Path) -> None:
    described = "a described kind of thing, with what it covers and what it does not " * 3
    entities = [{"label": f"Type{i}", "description": described} for i in range(80)]
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb, read_only=False)
        await tk.call("set_ontology", {"entities": entities})
        result = await tk.call("get_ontology", {})
        whole = result.to_llm_text(1_000_000)
        assert len(whole) > 8000  # larger than the default budget
        for budget in (200, 8000):
            text = result.to_llm_text(budget)
            assert 0 < len(text) <= budget and text.endswith("…")
            assert text.startswith("[1] Entity types: Type0 (0): a described kind of thing")
