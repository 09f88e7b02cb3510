"""The finalize tool with a resolver: an agent picks exact, fuzzy or llm within the operator's
plan limits (`finalize_resolvers`, `max_llm_pairs`), and the result says what resolution merged."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase, Toolkit
from evigraph.errors import ConfigurationError, ToolError

DOCS = {
    "a": "Marta Oliveira founded Harbor Lab in Lisbon in 2014. She hired Ana Costa.",
    "b": "Marta Olivera visited the Harbour Lab in Lisbon. Ana Costa met Rui Pinto there.",
}


async def _toolkit(tmp_path: Path, **options: object) -> Toolkit:
    kb = KnowledgeBase(tmp_path / "kb.db", extractor="rules")
    for key, text in DOCS.items():
        assert (await kb.ingest(text=text, key=key, progress=False)).ok
    return Toolkit(kb, **options)  # type: ignore[arg-type]


async def test_exact_by_default_and_fuzzy_merges_the_misspelt_names(tmp_path: Path) -> None:
    tk = await _toolkit(tmp_path)
    async with tk.kb:
        exact = (await tk.call("finalize", {})).model_dump()
        assert (exact["resolver"], exact["merged"]) == ("exact", 0)
        before = (await tk.call("status", {})).model_dump()["entities"]
        fuzzy = await tk.call("finalize", {"resolver": "fuzzy"})
        data = fuzzy.model_dump()
        assert data["resolver"] == "fuzzy" and data["merged"] >= 2 and data["candidates"] >= data["merged"]
        assert data["llm_tokens"] == 0
        assert "fuzzy resolution merged" in fuzzy.to_llm_text()
        assert (await tk.call("status", {})).model_dump()["entities"] == before - data["merged"]


async def test_a_resolver_the_operator_did_not_allow_is_refused_before_any_work(tmp_path: Path) -> None:
    tk = await _toolkit(tmp_path)
    async with tk.kb:
        before = (await tk.call("status", {})).model_dump()["entities"]
        with pytest.raises(ToolError, match="resolver 'llm' is not allowed here") as caught:
            await tk.call("finalize", {"resolver": "llm"})
        assert "allowed: exact, fuzzy" in caught.value.hint and "finalize_resolvers" in caught.value.hint
        with pytest.raises(ToolError, match="unknown resolver 'magic'") as unknown:
            await tk.call("finalize", {"resolver": "magic"})
        assert "invalid arguments for finalize" in unknown.value.message
        assert "use one of: exact, fuzzy, llm" in unknown.value.message
        strict = Toolkit(tk.kb, plan_limits={"finalize_resolvers": ["exact"]})
        with pytest.raises(ToolError, match="resolver 'fuzzy' is not allowed here"):
            await strict.call("finalize", {"resolver": "fuzzy"})
        with pytest.raises(ConfigurationError, match="max_llm_pairs must be a whole number"):
            await tk.kb.finalize(resolver="fuzzy", max_llm_pairs=-1)
        assert (await tk.call("status", {})).model_dump()["entities"] == before  # nothing was merged


async def test_allowing_llm_without_an_llm_says_how_to_give_one(tmp_path: Path) -> None:
    tk = await _toolkit(tmp_path, plan_limits={"finalize_resolvers": ["exact", "llm"]})
    async with tk.kb:
        with pytest.raises(ToolError, match="needs an LLM") as caught:
            await tk.call("finalize", {"resolver": "llm"})
        assert "--llm" in caught.value.hint


def test_the_finalize_tool_lists_the_registered_resolvers_in_its_schema(tmp_path: Path) -> None:
    tk = Toolkit(KnowledgeBase(tmp_path / "kb.db"))
    spec = next(s for s in tk.tool_specs() if s.name == "finalize")
    assert spec.input_schema["properties"]["resolver"]["anyOf"][0]["enum"] == ["exact", "fuzzy", "llm"]


def test_plan_limits_naming_an_unknown_finalize_resolver_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"unknown finalize resolver\(s\): magic"):
        Toolkit(KnowledgeBase(tmp_path / "kb.db"), plan_limits={"finalize_resolvers": ["magic"]})
    with pytest.raises(ConfigurationError, match="max_llm_pairs must be a whole number"):
        Toolkit(KnowledgeBase(tmp_path / "kb.db"), plan_limits={"max_llm_pairs": -1})
    with pytest.raises(ConfigurationError, match="invalid plan_limits"):
        Toolkit(KnowledgeBase(tmp_path / "kb.db"), plan_limits={"max_llm_pairs": "many"})


async def test_a_merge_keeps_the_properties_an_agent_recorded_on_either_entity(tmp_path: Path) -> None:
    from evigraph.models import EntityType, ExtractedEntity, Ontology
    from evigraph.property_types import PropertyOwner

    person = EntityType.model_validate(
        {"label": "Person", "properties": [{"name": "role", "type": "string"}, {"name": "born", "type": "date"}]}
    )
    marta, typo = ExtractedEntity.create("Marta Oliveira", "Person"), ExtractedEntity.create("Marta Olivera", "Person")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest(text=DOCS["a"], key="a", progress=False)
        await kb.set_ontology(Ontology(entities=(person,)))
        await kb.upsert_entities([marta], properties={marta.id: {"role": "founder"}}, property_source="agent:ana")
        await kb.upsert_entities([typo], properties={typo.id: {"role": "guest", "born": "1970-01-02"}})
        report = await kb.finalize(resolver="fuzzy")
        assert report.resolution is not None and report.resolution.merged >= 1
        store = kb.store
        assert store is not None
        left = [r.id for r in await store.entity_records() if r.id in (marta.id, typo.id)]
        assert len(left) == 1  # one survived
        held = await store.read_properties([PropertyOwner(owner="entity", id=left[0])], ["role", "born"])
        values, sources = held[left[0]].values, held[left[0]].sources
        assert set(values) == {"role", "born"} and values["born"] == "1970-01-02"  # carried from whichever went
        assert sources["born"] == "agent"
        kept = {marta.id: ("founder", "agent:ana"), typo.id: ("guest", "agent")}[left[0]]
        assert (values["role"], sources["role"]) == kept  # the survivor's own value wins
