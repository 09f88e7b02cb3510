"""One registry per strategy kind, and everything that lists strategy names reads it.

The point of the registries is that a new entry needs no second edit: the CLI choices, the
plan costs and limits and the tool input schema must follow the registry by themselves.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evigraph.cli.parser import build_parser
from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.ingest.chunking import CHUNKERS, FixedSizeChunking, chunker_by_name
from evigraph.ingest.extraction import EXTRACTORS, RuleBasedExtraction, extractor_by_name, spacy_models
from evigraph.ingest.loaders import (
    LOADERS,
    SUPPORTED_EXTENSIONS,
    HtmlLoader,
    JsonlLoader,
    MarkdownLoader,
    PdfLoader,
    TextLoader,
    loader_for,
)
from evigraph.ingest.resolution import RESOLVERS, ExactMatchResolution, resolver_by_name
from evigraph.models import ExtractedEntity, GraphData
from evigraph.providers.embedders import EMBEDDERS, OpenAIEmbedder, SentenceTransformerEmbedder, embedder_by_name
from evigraph.strategies import Registry
from evigraph.tools.inputs import PlanRule
from evigraph.tools.plans import PLAN_KINDS, PlanLimits, choose_plan, costs, describe_options, plan_limits_from

PARAGRAPH = "one passage per blank-line paragraph (registered by a test)"


def _option(parser: argparse.ArgumentParser, command: str, flag: str) -> argparse.Action:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands: dict[str, argparse.ArgumentParser] = sub.choices
    return next(a for a in commands[command]._actions if flag in a.option_strings)


def _plan_rule_enum(field: str) -> list[str]:
    schema: dict[str, Any] = PlanRule.model_json_schema()["properties"][field]
    [named] = [s for s in schema["anyOf"] if s.get("type") == "string"]
    return list(named["enum"])


@pytest.fixture
def paragraph_chunker(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A chunker registered for one test only; the registry is restored afterwards."""
    monkeypatch.setattr(CHUNKERS, "_entries", dict(CHUNKERS._entries))
    monkeypatch.setattr(CHUNKERS, "_names", dict(CHUNKERS._names))
    CHUNKERS.register("paragraph", lambda: FixedSizeChunking(200, 0), description=PARAGRAPH)
    yield "paragraph"


def test_each_kind_lists_its_built_ins() -> None:
    assert CHUNKERS.names() == ("fixed", "sentence", "structural", "contextual")
    assert EXTRACTORS.names() == ("auto", "spacy", "rules", "llm")
    assert RESOLVERS.names() == ("exact", "llm_verified")
    assert RESOLVERS.cheap_names() == ("exact",)  # an agent's plan needs the operator to allow the LLM one
    assert LOADERS.names() == ("text", "markdown", "pdf", "jsonl", "html")
    assert EMBEDDERS.forms() == (
        "none",
        "minilm",
        "sentence-transformers:<model or folder>",
        "fastembed:<model>",
        "openai:<model>",
    )
    for registry in (CHUNKERS, EXTRACTORS, RESOLVERS, LOADERS, EMBEDDERS):
        assert all(entry.description for entry in registry)


def test_supported_extensions_come_from_the_loaders() -> None:
    classes = (TextLoader, MarkdownLoader, PdfLoader, JsonlLoader, HtmlLoader)
    assert {ext for cls in classes for ext in cls.extensions} == SUPPORTED_EXTENSIONS
    assert LOADERS.extensions() == SUPPORTED_EXTENSIONS
    for entry in LOADERS:
        for ext in entry.extensions:
            assert loader_for(Path(f"doc{ext.upper()}")).name == entry.name
    assert LOADERS.create("PDF", max_bytes=7).max_bytes == 7  # type: ignore[attr-defined]


def test_cli_choices_and_help_follow_the_registries() -> None:
    parser = build_parser()
    assert list(_option(parser, "ingest", "--chunker").choices or ()) == list(CHUNKERS.names())
    assert list(_option(parser, "ingest", "--extractor").choices or ()) == list(EXTRACTORS.names())
    help_text = _option(parser, "ingest", "--embedder").help or ""
    assert all(form in help_text for form in EMBEDDERS.forms())


def test_plan_costs_limits_and_schema_follow_the_registries() -> None:
    assert {kind: list(names) for kind, names in costs().items()} == {
        "chunker": list(CHUNKERS.names()),
        "extractor": list(EXTRACTORS.names()),
        "resolver": list(RESOLVERS.names()),
    }
    limits = PlanLimits()
    assert (limits.chunkers, limits.extractors, limits.resolvers) == (
        CHUNKERS.cheap_names(),
        EXTRACTORS.cheap_names(),
        RESOLVERS.cheap_names(),
    )
    text = describe_options(limits)
    for registry in PLAN_KINDS.values():
        for entry in registry:  # only what the cheap limits allow is offered to an agent
            assert (f"{entry.name}: {entry.description}" in text) == entry.cheap
    assert _plan_rule_enum("chunker") == list(CHUNKERS.names())
    assert _plan_rule_enum("extractor") == list(EXTRACTORS.names())
    assert _plan_rule_enum("resolver") == list(RESOLVERS.names())


def test_a_new_entry_shows_up_everywhere_by_itself(paragraph_chunker: str) -> None:
    parser = build_parser()
    assert paragraph_chunker in (_option(parser, "ingest", "--chunker").choices or ())
    assert costs()["chunker"][paragraph_chunker] == PARAGRAPH
    assert paragraph_chunker in PlanLimits().chunkers
    assert f"{paragraph_chunker}: {PARAGRAPH}" in describe_options(PlanLimits())
    assert paragraph_chunker in _plan_rule_enum("chunker")
    plan, reason = choose_plan(
        "a.md", [PlanRule.model_validate({"chunker": paragraph_chunker})], plan_limits_from(None)
    )
    assert plan["chunker"] == paragraph_chunker and reason is None
    chunker = chunker_by_name("Paragraph")
    assert isinstance(chunker, FixedSizeChunking) and chunker.chunk_size == 200


def test_the_registered_chunker_is_gone_after_its_test() -> None:
    assert "paragraph" not in CHUNKERS


@pytest.mark.parametrize(
    ("lookup", "bad", "choices"),
    [
        (chunker_by_name, "semantic", "fixed, sentence, structural"),
        (chunker_by_name, "fixed:100", "fixed, sentence, structural"),
        (extractor_by_name, "gpt", "auto, spacy, rules, llm"),
        (resolver_by_name, "fuzzy", "exact"),
        (embedder_by_name, "minilm:x", "none, minilm, sentence-transformers:<model or folder>, fastembed:<model>"),
        (LOADERS.create, "docx", "text, markdown, pdf, jsonl, html"),
    ],
)
def test_unknown_names_are_refused_with_the_choices(lookup: Any, bad: str, choices: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        lookup(bad)
    assert repr(bad) in info.value.message
    assert info.value.hint.startswith(f"use one of: {choices}")


def test_plan_limits_refuse_names_no_registry_knows() -> None:
    with pytest.raises(ConfigurationError) as info:
        plan_limits_from({"resolvers": ["exact", "fuzzy"]})
    assert "fuzzy" in info.value.message and "resolvers: exact" in info.value.hint


async def test_resolver_by_name_exact_merges_duplicates() -> None:
    resolver = resolver_by_name(" Exact ")
    assert isinstance(resolver, ExactMatchResolution)
    acme = ExtractedEntity.create("Acme Corp", "Organization", "makes anvils")
    again = ExtractedEntity.create("Acme  Corp", "Organization", "sells anvils")
    merged = await resolver.resolve(GraphData(entities=(acme, again)))
    [entity] = merged.entities
    assert entity.descriptions == ("makes anvils", "sells anvils")


def test_arguments_keep_their_case_and_colons(monkeypatch: pytest.MonkeyPatch) -> None:
    st = embedder_by_name("ST:BAAI/bge-small-en-v1.5")
    assert isinstance(st, SentenceTransformerEmbedder) and st.name == "BAAI/bge-small-en-v1.5"
    monkeypatch.setenv("EVIGRAPH_EMBED_BASE_URL", "http://localhost:11434/v1")
    remote = embedder_by_name("openai:Nomic-Embed:latest")
    assert isinstance(remote, OpenAIEmbedder) and remote.name == "Nomic-Embed:latest"
    assert embedder_by_name("OFF") is None and embedder_by_name("  ") is None


def test_an_entry_whose_dependency_is_missing_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spacy_models, "MODEL_CANDIDATES", ("no_such_model_xyz",))
    spacy = EXTRACTORS.get("spacy")
    assert not spacy.available() and EXTRACTORS.get("rules").available()
    with pytest.raises(ConfigurationError) as info:
        extractor_by_name("spacy")
    assert info.value.hint == install_hint("spacy")
    assert "[spacy]" in info.value.hint and info.value.hint.startswith("pip install")
    assert isinstance(extractor_by_name("auto"), RuleBasedExtraction)


def test_a_registry_refuses_clashing_or_malformed_names() -> None:
    registry: Registry[int] = Registry("counter")
    registry.register("one", lambda: 1, description="the first", aliases=("uno",))
    for name, aliases in (("one", ()), ("two", ("uno",)), ("Two", ()), ("a:b", ()), ("a b", ()), ("", ())):
        with pytest.raises(ConfigurationError):
            registry.register(name, lambda: 2, description="clash", aliases=aliases)
    assert registry.names() == ("one",) and registry.create("UNO") == 1
    assert "uno" in registry and "two" not in registry


def test_plan_rules_refuse_names_the_schema_does_not_list() -> None:
    with pytest.raises(ValidationError) as info:
        PlanRule.model_validate({"extractor": "Rules"})
    assert "unknown extractor 'Rules'; use one of: auto, spacy, rules" in str(info.value)
