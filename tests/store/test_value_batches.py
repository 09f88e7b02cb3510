"""Statements' parameter rows are cut by values as well as rows: the engine holds an object per value."""

from __future__ import annotations

from evigraph.store.embedded.executor import value_batches


def _row(vectors: int, dim: int = 384) -> dict[str, object]:
    return {"id": "c", "emb": [0.0] * dim, "sv": [[0.0] * dim for _ in range(vectors)]}


def test_rows_with_vectors_are_cut_by_values_in_order() -> None:
    rows = [{**_row(5), "id": str(i)} for i in range(200)]  # about 2,300 values a row
    batches = list(value_batches(rows, most_rows=5000, most_values=100_000))
    assert [r["id"] for b in batches for r in b] == [str(i) for i in range(200)]
    assert len(batches) > 1  # 5,000 rows alone would have sent all 200 at once
    per_row = 1 + (1 + 384) + (1 + 5 * (1 + 384))
    assert all(len(b) * per_row <= 100_000 for b in batches)
    assert all(len(b) == 100_000 // per_row for b in batches[:-1])  # full up to the bound


def test_small_rows_are_cut_by_rows() -> None:
    rows = [{"a": i, "b": "x"} for i in range(12_001)]
    assert [len(b) for b in value_batches(rows, most_rows=5000)] == [5000, 5000, 2001]


def test_a_row_over_the_bound_goes_alone_and_nothing_is_empty() -> None:
    rows = [_row(1), _row(400), _row(1)]  # the middle row alone holds about 154,000 values
    batches = list(value_batches(rows, most_values=100_000))
    assert [len(b) for b in batches] == [1, 1, 1]
    assert list(value_batches([], most_rows=10)) == []
