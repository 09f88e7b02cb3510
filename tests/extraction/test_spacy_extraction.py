"""SpacyExtraction with the real installed model: labels, spans, relations, batching, loading."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.ingest.extraction import (
    RuleBasedExtraction,
    SpacyExtraction,
    available_spacy_model,
    default_extractor,
    extractor_by_name,
    spacy_models,
    spacy_ner,
)
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import UNKNOWN_LABEL, EntityType, GraphData, Ontology, TextChunk

OBAMA = "Barack Obama was born in Hawaii in 1961. He later worked with Microsoft in the United States."
MERKEL = "Angela Merkel met Emmanuel Macron in Berlin on 3 May 2019. Three ministers and the first envoy attended."
JOBS = "The company Apple was founded by Steve Jobs in California in 1976."
TEN = (
    "John Smith, Mary Johnson, Robert Brown, Linda Davis, Michael Miller, Sarah Wilson, "
    "David Moore, Susan Taylor, James Anderson and Karen Thomas attended the meeting."
)


def chunks(*texts: str) -> list[TextChunk]:
    return [TextChunk(index=i, text=t, start=0, end=len(t)) for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def extractor() -> SpacyExtraction:
    return SpacyExtraction()


def labels(graph: GraphData) -> dict[str, str]:
    return {e.name: e.label for e in graph.entities}


async def test_people_orgs_places_and_dates_under_the_default_ontology(extractor: SpacyExtraction) -> None:
    found = labels(await extractor.extract(chunks(OBAMA, JOBS), DEFAULT_ONTOLOGY))
    assert found["Barack Obama"] == found["Steve Jobs"] == "Person"
    assert found["Microsoft"] == found["Apple"] == "Organization"
    assert found["Hawaii"] == found["California"] == "Location"
    assert found["1961"] == found["1976"] == "Date"


async def test_leading_the_is_not_part_of_the_name(extractor: SpacyExtraction) -> None:
    graph = await extractor.extract(chunks(OBAMA), DEFAULT_ONTOLOGY)
    us = next(e for e in graph.entities if e.id == "location:united states")
    assert us.name == "United States"
    mention = next(m for m in graph.mentions if m.entity_id == us.id)
    assert [OBAMA[s.start : s.end] for s in mention.spans] == ["United States"]


async def test_cardinal_and_ordinal_are_dropped(extractor: SpacyExtraction) -> None:
    found = labels(await extractor.extract(chunks(MERKEL), DEFAULT_ONTOLOGY))
    assert "Three" not in found and "first" not in found
    assert found["3 May 2019"] == "Date" and found["Berlin"] == "Location"


async def test_a_day_s_ordinal_before_a_date_is_part_of_it(extractor: SpacyExtraction) -> None:
    # The model tags "13th" ORDINAL apart from "October, 2021"; "May" before a number is no common word.
    text = "## 0.20.0 (13th October, 2021)\n\nReleased on May 12th, 2020, then in 2021."
    found = labels(await extractor.extract(chunks(text), DEFAULT_ONTOLOGY))
    assert found["13th October, 2021"] == found["May 12th, 2020"] == "Date"


async def test_ontology_without_person_makes_persons_unknown(extractor: SpacyExtraction) -> None:
    onto = Ontology(entities=(EntityType(label="organization"), EntityType(label="Place")))
    found = labels(await extractor.extract(chunks(JOBS), onto))
    assert found["Steve Jobs"] == UNKNOWN_LABEL
    assert found["Apple"] == "organization"
    assert found["California"] == "Place"


async def test_spans_reproduce_the_surface_text(extractor: SpacyExtraction) -> None:
    texts = (OBAMA, MERKEL, JOBS, TEN)
    graph = await extractor.extract(chunks(*texts), DEFAULT_ONTOLOGY)
    names = {e.id: e.name for e in graph.entities}
    assert len(graph.mentions) >= 20
    for m in graph.mentions:
        for s in m.spans:
            assert texts[m.chunk_index][s.start : s.end] == names[m.entity_id]


async def test_relations_stay_within_a_sentence_with_the_sentence_as_fact(extractor: SpacyExtraction) -> None:
    graph = await extractor.extract(chunks(OBAMA), DEFAULT_ONTOLOGY)
    first, second = OBAMA.split(". ")
    first += "."
    groups = {
        first: {"person:barack obama", "location:hawaii", "date:1961"},
        second: {"organization:microsoft", "location:united states"},
    }
    assert {r.fact for r in graph.relations} == set(groups)
    for r in graph.relations:
        assert {r.source, r.target} <= groups[r.fact]
        assert r.chunk_indexes == (0,)


async def test_many_names_in_one_sentence_are_paired_linearly(extractor: SpacyExtraction) -> None:
    graph = await extractor.extract(chunks(TEN), DEFAULT_ONTOLOGY)
    assert sum(e.label == "Person" for e in graph.entities) == 10
    per_source: dict[str, int] = {}
    for r in graph.relations:
        per_source[r.source] = per_source.get(r.source, 0) + 1
    assert max(per_source.values()) == 3
    assert len(graph.relations) == 24  # not the 45 of all pairs


class PipeSpy:
    """Wraps a loaded pipeline and records each `pipe` call and the thread it ran in."""

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp
        self.calls: list[tuple[int, str]] = []

    def pipe(self, texts: list[str], **kwargs: Any) -> Iterator[Any]:
        self.calls.append((len(texts), threading.current_thread().name))
        return iter(self.nlp.pipe(texts, **kwargs))


async def test_extract_many_batches_all_chunks_in_one_pipe_call_off_the_loop(
    extractor: SpacyExtraction, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [chunks(OBAMA, MERKEL), chunks(JOBS), chunks(TEN, OBAMA)]
    alone = [await extractor.extract(doc, DEFAULT_ONTOLOGY) for doc in docs]
    spy = PipeSpy(extractor.nlp)
    monkeypatch.setattr(SpacyExtraction, "nlp", property(lambda self: spy))
    together = await extractor.extract_many(docs, DEFAULT_ONTOLOGY)
    assert together == alone
    assert len(spy.calls) == 1 and spy.calls[0][0] == 5
    assert spy.calls[0][1] != threading.current_thread().name


def test_reduced_pipeline_runs_only_ner_and_is_cached() -> None:
    nlp = spacy_ner.load_model()
    assert nlp.pipe_names == ["ner"]
    assert spacy_ner.load_model() is nlp
    full = spacy_ner.load_model(reduced=False)
    assert "parser" in full.pipe_names and full is not nlp


def test_reduced_pipeline_finds_the_same_entities_as_the_full_one() -> None:
    texts = [OBAMA, MERKEL, JOBS, TEN]
    reduced = spacy_ner.load_model()
    full = spacy_ner.load_model(reduced=False)

    def ents(nlp: Any) -> list[list[tuple[int, int, str]]]:
        return [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]

    assert ents(reduced) == ents(full)


def test_model_discovery_and_extractor_choice() -> None:
    model = available_spacy_model()
    assert model in spacy_models.MODEL_CANDIDATES
    assert isinstance(default_extractor(), SpacyExtraction)
    assert isinstance(extractor_by_name("auto"), SpacyExtraction)
    assert isinstance(extractor_by_name("Spacy"), SpacyExtraction)
    assert isinstance(extractor_by_name("rules"), RuleBasedExtraction)
    with pytest.raises(ConfigurationError) as err:
        extractor_by_name("llm-magic")
    assert "spacy" in err.value.hint and "rules" in err.value.hint and "auto" in err.value.hint


def test_without_a_model_the_default_falls_back_to_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spacy_models, "MODEL_CANDIDATES", ("no_such_model_xyz",))
    assert spacy_models.available_spacy_model() is None
    assert isinstance(default_extractor(), RuleBasedExtraction)
    with pytest.raises(ConfigurationError, match="spaCy"):
        extractor_by_name("spacy")


async def test_unloadable_model_raises_configuration_error_with_install_hint() -> None:
    with pytest.raises(ConfigurationError) as err:
        await SpacyExtraction(model="no_such_model_xyz").extract(chunks(OBAMA), DEFAULT_ONTOLOGY)
    assert install_hint("spacy") in err.value.hint


def test_spacy_is_not_imported_with_the_package() -> None:
    code = "import sys, evigraph.ingest.extraction as x; x.available_spacy_model(); print('spacy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


_ENTITIES_PROBE = """
import json, sys
{before}
from evigraph.ingest.extraction.spacy_ner import load_model
nlp = load_model()
torch_after_spacy = "torch" in sys.modules
texts = {texts!r}
ents = [[(e.start_char, e.end_char, e.label_) for e in d.ents] for d in nlp.pipe(texts)]
import torch  # still importable in this process, e.g. for a sentence-transformers embedder
print(json.dumps({{"torch_after_spacy": torch_after_spacy, "tensor": torch.ones(2).sum().item(), "ents": ents}}))
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed: nothing to keep out")
def test_the_default_model_loads_without_torch_and_finds_the_same_entities() -> None:
    """thinc imports torch with spaCy when it is installed (2.3 s of a 3 s import), which the small
    English models never use: a cold search with an embedder paid it to find the question's names."""

    def probe(before: str) -> dict[str, Any]:
        code = _ENTITIES_PROBE.format(before=before, texts=[OBAMA, MERKEL, JOBS, TEN])
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        result: dict[str, Any] = json.loads(out.stdout)
        return result

    hidden, with_torch = probe(""), probe("import torch")
    assert hidden["torch_after_spacy"] is False
    assert with_torch["torch_after_spacy"] is True
    assert hidden["tensor"] == 2.0
    assert hidden["ents"] == with_torch["ents"]
    assert any(hidden["ents"])


async def test_empty_documents(extractor: SpacyExtraction) -> None:
    assert await extractor.extract_many([[], []], DEFAULT_ONTOLOGY) == [GraphData(), GraphData()]


@pytest.mark.parametrize(
    ("name", "kept"),
    [("1998", True), ("March 3, 2021", True), ("the 1990s", True), ("today", False), ("27365", False), ("80", False)],
)
def test_dates_name_a_fixed_time(name: str, kept: bool) -> None:
    from evigraph.ingest.extraction.spacy_ner import _plausible_date

    assert _plausible_date(name) is kept
