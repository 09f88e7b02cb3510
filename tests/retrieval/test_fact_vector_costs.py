"""Relation facts are most of the texts to embed (2wiki: 5.36 a passage), and only a strategy that
searches them reads their vectors (`RetrievalStrategy.searches_fact_vectors`): a default knowledge
base embeds none and saves no fact index; a strategy of a user's own that says it searches them
gets both."""

from __future__ import annotations

from pathlib import Path

from tests.retrieval.test_retrieve import HashEmbedder

from evigraph import KnowledgeBase
from evigraph.models import LoadedDocument
from evigraph.retrieval.query import RetrieveInput
from evigraph.retrieval.result import RetrievalResult
from evigraph.retrieval.retriever import MultiPathRetrieval
from evigraph.retrieval.strategy import RetrievalContext, RetrievalStrategy

DOCUMENTS = {
    "doc:tower": ("Paris sights", "The Louvre Museum stands in Paris. Gustave Eiffel designed the Eiffel Tower."),
    "doc:curie": ("Marie Curie", "Marie Curie worked with Pierre Curie in Paris on radium."),
}


class FactSearching(RetrievalStrategy):
    name = "fact-searching"

    @property
    def searches_fact_vectors(self) -> bool:
        return True

    async def search(self, query: RetrieveInput, context: RetrievalContext, passages: int) -> RetrievalResult:
        return RetrievalResult(question=query.question)


async def _finalized(db: Path, retrieval: RetrievalStrategy | None) -> int:
    """Ingest and finalize with an embedder; how many facts still wait for a vector."""
    async with KnowledgeBase(db, embedder=HashEmbedder(), extractor="rules", retrieval=retrieval) as kb:
        docs = [LoadedDocument(key=k, title=t, path=None, text=x, loader="text") for k, (t, x) in DOCUMENTS.items()]
        assert (await kb.ingest_documents(docs, progress=False)).ok
        await kb.finalize()
        assert kb.store is not None
        return sum(t.kind == "fact" for t in await kb.store.pending_ranking_texts(limit=1000))


def _saved(db: Path) -> set[str]:
    return {p.stem for p in db.with_name(db.name + ".indexes").glob("*.json")}


async def test_a_default_knowledge_base_embeds_no_facts_and_saves_no_fact_index(tmp_path: Path) -> None:
    assert not MultiPathRetrieval().searches_fact_vectors
    db = tmp_path / "kb.db"
    assert await _finalized(db, None) > 0  # left for a strategy that searches them
    saved = _saved(db)
    assert {"passages_bm25", "graph", "vectors"} <= saved and not any(n.startswith("fact_vectors") for n in saved)


async def test_a_strategy_that_searches_facts_gets_them_embedded_and_saved(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    assert await _finalized(db, FactSearching()) == 0
    assert "fact_vectors" in _saved(db)
