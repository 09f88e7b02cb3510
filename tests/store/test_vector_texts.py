"""Vectors handed to the embedded engine as text: exact where every vector has one length, lists otherwise."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from tests.conftest import engine_connection

from evigraph.store.embedded.executor import vector_texts


def round_trip(tmp_path: Path, values: list[object]) -> list[object]:
    """What the engine stores for each value, written in one UNWIND as the store writes passages."""
    conn = engine_connection(tmp_path / "v.db")
    conn.execute("CREATE NODE TABLE V(id INT64, e FLOAT[], PRIMARY KEY(id))")
    rows = [{"id": i, "e": v} for i, v in enumerate(values)]
    conn.execute("UNWIND $rows AS r CREATE (:V {id: r.id, e: CAST(r.e AS FLOAT[])})", {"rows": rows})
    result = conn.execute("MATCH (v:V) RETURN v.e ORDER BY v.id")
    out = []
    while result.has_next():
        out.append(result.get_next()[0])
    return out


def test_vectors_of_one_length_go_as_text_and_come_back_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 384)).astype(np.float32)
    vectors[0, :6] = [1e-30, -3.4e38, 0.0, 1.0, 1e-40, -1.4e-45]  # tiny, huge, round and subnormal values too
    as_lists: list[list[float] | None] = [row.tolist() for row in vectors]
    as_lists.insert(7, None)
    sent = vector_texts(as_lists)
    assert all(isinstance(s, str) for i, s in enumerate(sent) if i != 7) and sent[7] is None
    back = round_trip(tmp_path, sent)
    assert back[7] is None
    got = np.asarray([b for b in back if b is not None], dtype=np.float32)
    assert got.tobytes() == vectors.tobytes()  # every bit of every float


def test_vectors_of_mixed_lengths_go_as_lists(tmp_path: Path) -> None:
    """As text the engine would cut or pad each to the first row's length."""
    sent = vector_texts([[9.0, 36.0], [1.0]])
    assert sent == [[9.0, 36.0], [1.0]]
    assert round_trip(tmp_path, sent) == [[9.0, 36.0], [1.0]]


def test_a_vector_with_nan_sends_every_vector_as_a_list(tmp_path: Path) -> None:
    sent = vector_texts([[1.0, math.nan], [0.5, 0.25]])
    assert all(isinstance(s, list) for s in sent)
    back = round_trip(tmp_path, sent)
    assert math.isnan(back[0][1]) and back[1] == [0.5, 0.25]  # type: ignore[index]
