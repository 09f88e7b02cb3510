"""A scoped store's match-quality reads: term counts over the scope only, vector hits in scope."""

from __future__ import annotations

from pathlib import Path

from tests.store.contract.conftest import build_library

from evigraph.store import connect
from evigraph.store.terms import passage_terms

BABBAGE, HOPPER = (min(passage_terms(name)) for name in ("Babbage", "Hopper"))


async def test_scoped_term_counts_and_vector_hits_show_only_the_scope(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with connect(db) as store:
        library = await build_library(store)
        await store.write_embeddings([(library.beta[0], (0.0, 0.0, 1.0))])
        whole = await store.term_counts([BABBAGE, HOPPER])
    assert (whole.passages, whole.counts) == (3, {BABBAGE: 2, HOPPER: 1})
    async with connect(db, read_only=True, scope=["team/alpha"]) as scoped:
        # Counts over the whole graph would tell whether a word occurs in documents outside the scope.
        counts = await scoped.term_counts([BABBAGE, HOPPER])
        assert (counts.passages, counts.counts) == (2, {BABBAGE: 2, HOPPER: 0})
        found = await scoped.vector_search_stats([0.0, 0.0, 1.0], limit=5)
        assert {cid for cid, _ in found.hits} == set(library.alpha)
        assert found.passages == 3  # the background is the whole graph's: a mean and spread name no passage
