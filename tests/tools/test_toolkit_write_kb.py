"""Write tools standing on the knowledge base: ontology changes under its write gate, decided on the
whole graph, and per-file plans (the resolver included) applied by the knowledge base."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.tools.conftest import run, write_corpus

from evigraph import KnowledgeBase, Toolkit
from evigraph.ingest.resolution import RESOLVERS, ResolutionStrategy
from evigraph.models import GraphData
from evigraph.store.opening import connect
from evigraph.tools.graph_tools import CypherResult, OntologyResult
from evigraph.tools.write_tools import IngestResult, OntologyChange

NOTE = "Dr. Ingrid Halvorsen works for Acme Robotics Corp in Oslo."


async def labels(tk: Toolkit) -> list[str]:
    return [e.label for e in (await run(tk, "get_ontology", {}, OntologyResult)).entity_types]


async def test_two_sessions_extending_the_ontology_at_once_keep_both_additions(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        first, second = (toolkit := Toolkit(kb)), toolkit.new_session()
        await run(first, "set_ontology", {"entities": [{"label": "Person"}]}, OntologyChange)
        for round_ in range(5):  # each round both read the same ontology, then both write
            a, b = f"Ship{round_}", f"Harbour{round_}"
            changes = await asyncio.gather(
                run(first, "set_ontology", {"entities": [{"label": a}]}, OntologyChange),
                run(second, "set_ontology", {"entities": [{"label": b}]}, OntologyChange),
            )
            assert [c.added_entity_types for c in changes] == [[a], [b]]
            assert {a, b} <= set(await labels(first))
        assert len(await labels(second)) == 11
    async with KnowledgeBase(tmp_path / "kb.db", read_only=True) as reopened:  # and both were stored
        assert len((await reopened.load_ontology()).entities) == 11


async def test_a_server_scoped_to_an_empty_part_of_a_shared_graph_only_adds_to_the_default(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text=NOTE, key="shared/note", progress=False)  # ingested with the default types
    async with KnowledgeBase(db, store=connect(db, scope=["mine/*"]), extractor="rules") as scoped:
        tk = Toolkit(scoped)
        assert (await scoped.status()).documents == 0  # nothing in its scope...
        change = await run(tk, "set_ontology", {"entities": [{"label": "Vessel"}]}, OntologyChange)
        assert not change.replaced_default  # ...but the graph holds documents extracted with the default
        assert {"Person", "Organization", "Vessel"} <= set(await labels(tk))


class TaggingResolution(ResolutionStrategy):
    """Marks every entity it resolves, so a test can see which files it ran on."""

    name = "tagging"

    async def resolve(self, graph: GraphData) -> GraphData:
        tagged = tuple(e.model_copy(update={"aliases": (*e.aliases, "resolved-by-tagging")}) for e in graph.entities)
        return graph.model_copy(update={"entities": tagged})


@pytest.fixture
def tagging_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver registered for one test (a plugin would register it the same way)."""
    monkeypatch.setattr(RESOLVERS, "_entries", dict(RESOLVERS._entries))
    monkeypatch.setattr(RESOLVERS, "_names", dict(RESOLVERS._names))
    RESOLVERS.register("tagging", TaggingResolution, description="tags entities (tests)")


async def test_each_file_is_ingested_with_the_resolver_its_plan_names(tmp_path: Path, tagging_resolver: None) -> None:
    root = write_corpus(tmp_path / "root")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb, files_root=root)
        plan: list[dict[str, Any]] = [
            {"match": "notes/*", "extractor": "rules", "resolver": "tagging"},
            {"match": "*", "extractor": "rules"},
        ]
        result = await run(tk, "ingest", {"files": ["**/*"], "plan": plan}, IngestResult)
        assert {d.path: d.plan["resolver"] for d in result.documents if d.plan} == {
            "notes/globex.txt": "tagging",
            "acme.md": "default",  # the knowledge base's own resolver
        }
        query = (
            "MATCH (e:Entity) WHERE e.name IN ['Hank Scorpio', 'Lars Berg'] "
            "RETURN e.name AS name, list_contains(e.aliases, 'resolved-by-tagging') AS tagged ORDER BY name"
        )
        found = (await run(tk, "cypher_query", {"query": query}, CypherResult)).rows
        # Hank Scorpio is named only in notes/globex.txt, Lars Berg only in acme.md
        assert found == [{"name": "Hank Scorpio", "tagged": True}, {"name": "Lars Berg", "tagged": False}]
