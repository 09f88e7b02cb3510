"""Every call that passes validation ends in a result or a `ToolError`, whatever the arguments.

Lone surrogates are checked by name on the tools where they crashed the engine, and at the
store beneath them; then a seeded run of the fuzz harness (`bench/fuzz.py`, which runs 10,000
calls) sends 1,000 hostile calls over every tool of a writable toolkit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests.tools.conftest import RULES_PLAN

from evigraph.errors import StoreError, ToolError
from evigraph.kb import KnowledgeBase
from evigraph.models import ExtractedEntity
from evigraph.tools.toolkit import Toolkit
from evigraph.tools.write_tools import IngestResult


def _load_harness() -> ModuleType:
    """bench/fuzz.py, the one definition of the argument generator and the runner."""
    path = Path(__file__).resolve().parents[2] / "bench" / "fuzz.py"
    spec = importlib.util.spec_from_file_location("evigraph_bench_fuzz", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


fuzz = _load_harness()


@pytest.fixture
def schema_checked_calls() -> list[tuple[str, dict[str, Any]]]:
    """Off here: fuzzed arguments are meant to break the schema (and lax validation accepts "5" for 5)."""
    return []


@pytest.fixture
async def writable(tmp_path: Path) -> Any:
    db, corpus = await fuzz.build_kb(tmp_path)
    async with KnowledgeBase(db, extractor="rules", embedder=fuzz.HashEmbedder()) as kb:
        yield Toolkit(kb, read_only=False, files_root=corpus)


SURROGATE = "\ud800"
CALLS = [
    ("read_passages", {"passages": [SURROGATE]}, "passages.0"),
    ("navigate_document", {"passage": "passage:" + SURROGATE, "relation": "next"}, "passage"),
    ("explore_relationships", {"entity": SURROGATE}, "entity"),
    (
        "explore_relationships",
        {"entity": "Acme Robotics Corp", "relation_types": ["x" + SURROGATE]},
        "relation_types.0",
    ),
    ("search_entities", {"query": "Acme", "labels": [SURROGATE]}, "labels.0"),
    ("upsert_entities", {"entities": [{"name": "Acme", "label": "Organization", "aliases": [SURROGATE]}]}, "aliases.0"),
    ("cypher_query", {"query": "RETURN $a AS a", "params": {"a": ["ok", SURROGATE]}}, "params.a.1"),
    ("ingest", {"files": ["a" + SURROGATE + ".md"], "plan": RULES_PLAN}, "files.0"),
    ("retrieve", {"question": "Who? \udcff"}, "question"),
]


@pytest.mark.parametrize(("name", "args", "where"), CALLS, ids=[f"{c[0]}-{c[2]}" for c in CALLS])
async def test_a_lone_surrogate_is_refused_with_the_field_named(
    writable: Toolkit, name: str, args: dict[str, Any], where: str
) -> None:
    with pytest.raises(ToolError, match="lone surrogate") as refused:
        await writable.call(name, args)
    assert where in refused.value.message
    str(refused.value).encode("utf-8")  # the refusal itself can be sent


async def test_the_store_names_text_it_cannot_take(tmp_path: Path) -> None:
    """Beneath the tools (the Python API), the engine's opaque cast error becomes a StoreError."""
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest(text="Acme Robotics Corp is in Oslo.", key="note", progress=False)
        with pytest.raises(StoreError, match="lone surrogate"):
            await kb.delete("note" + SURROGATE)
        with pytest.raises(StoreError, match="lone surrogate"):
            await kb.source_status(SURROGATE)
        with pytest.raises(StoreError, match="lone surrogate"):
            await kb.upsert_entities([ExtractedEntity.create("Acme" + SURROGATE, "Organization", "")])
        assert (await kb.status()).documents == 1  # nothing was lost on the way


async def test_a_thousand_hostile_calls_end_in_results_or_tool_errors(writable: Toolkit) -> None:
    report = await fuzz.fuzz(writable, 1000, seed=7, timeout=20.0)
    failures = [f"{f.kind} {f.tool} at {f.where}: {f.error} <- {f.arguments}" for f in report.failures]
    assert failures == []
    assert report.calls == 1000 and set(report.tools) == {s.name for s in writable.tool_specs()}
    counts = report.tools.values()
    assert all(c.calls >= 1000 // len(report.tools) for c in counts)
    # The calls reached the handlers: most tools answered some of them with a result.
    assert sum(c.results > 0 for c in counts) >= len(report.tools) - 2


async def test_a_document_key_too_long_for_a_file_name_is_still_a_text_id(writable: Toolkit) -> None:
    """Found by the fuzz harness: checking whether the id names a file under the root raised ENAMETOOLONG."""
    long_id = "note-" + "x" * 300  # one path component over the 255 bytes a file name may have
    result = await writable.call("ingest", {"text": "Acme Robotics Corp is in Oslo.", "document_key": long_id})
    assert isinstance(result, IngestResult)
    assert [(d.document_key, d.status) for d in result.documents] == [(long_id, "ingested")]
