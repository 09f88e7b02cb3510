"""What match quality reads from a store: the question's cosines to every passage, and term counts."""

from __future__ import annotations

import pytest
from tests.store.contract.conftest import ALPHA, BETA, Library, covers

from evigraph.store import GraphStore
from evigraph.store.base import VectorSearch
from evigraph.store.terms import passage_terms

pytestmark = pytest.mark.asyncio(loop_scope="module")


@covers("vector_search_stats")
async def test_vector_search_stats_ranks_as_vector_search_and_describes_every_cosine(library: Library) -> None:
    store = library.store
    query = [0.6, 0.8, 0.0]
    found = await store.vector_search_stats(query, limit=1)
    assert [cid for cid, _ in found.hits] == [cid for cid, _ in await store.vector_search(query, limit=1)]
    assert found.hits[0][1] == pytest.approx(0.8)
    # Both embedded passages (cosines 0.6 and 0.8) count, however few hits are asked for; the
    # pending one has no vector and does not.
    assert found.passages == 2
    assert found.mean == pytest.approx(0.7) and found.std == pytest.approx(0.1)


async def test_vector_search_stats_of_an_empty_store(store: GraphStore) -> None:
    assert await store.vector_search_stats([1.0, 0.0, 0.0]) == VectorSearch()


@covers("term_counts")
async def test_term_counts_read_passages_with_their_titles_and_fold_plurals(library: Library) -> None:
    babbage, london, compiler, zebra = (min(passage_terms(w)) for w in ("Babbage", "London", "compilers", "zebra"))
    alpha = min(passage_terms(ALPHA.title))  # only in a title: full-text search reads titles too
    found = await library.store.term_counts([babbage, london, compiler, zebra, alpha])
    assert found.passages == len(ALPHA.chunks) + len(BETA.chunks)
    assert found.counts == {babbage: 2, london: 1, compiler: 1, zebra: 0, alpha: 2}
    assert (await library.store.term_counts([])).counts == {}
