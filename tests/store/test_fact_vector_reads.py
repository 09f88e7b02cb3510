"""`read_fact_vectors` reads a page of source entities at a time into one float32 matrix: one
query of every fact held all their vectors as Python floats at once (about 25 KB a fact)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evigraph.store.core import ranking_reads

FACTS = {f"e{s}": [(f"r{s}.{i}", [float(s), float(i), 1.0]) for i in range(s % 3)] for s in range(7)}


def test_facts_are_read_a_page_of_sources_at_a_time_into_one_float32_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking_reads, "BATCH", 2)
    pages: list[list[str]] = []

    def read(query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if "count(r)" in query:
            return [{"s": s, "n": len(rels)} for s, rels in FACTS.items() if rels]
        pages.append(params["ids"])
        assert len(params["ids"]) <= 2
        return [{"id": r, "s": s, "c": f"c-{r}", "v": v} for s in params["ids"] for r, v in FACTS[s]]

    ids, chunks, sources, matrix = ranking_reads.read_fact_vectors(read, lambda c: [c])
    wanted = [(r, s, v) for s, rels in sorted(FACTS.items()) for r, v in rels]
    assert len(pages) == 2 and sorted(s for page in pages for s in page) == [s for s in sorted(FACTS) if FACTS[s]]
    assert matrix.dtype == np.float32 and matrix.shape == (len(wanted), 3)
    assert list(ids) == [r for r, _, _ in wanted] and list(sources) == [s for _, s, _ in wanted]
    assert list(chunks) == [f"c-{r}" for r, _, _ in wanted]
    assert np.array_equal(matrix, np.asarray([v for _, _, v in wanted], dtype=np.float32))


def test_no_fact_vectors_read_as_none() -> None:
    assert ranking_reads.read_fact_vectors(lambda q, p: [], list) == ([], [], [], None)
