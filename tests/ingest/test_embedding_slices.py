"""The ingest's embedding slices: every text once, like lengths together, vectors back in order."""

from __future__ import annotations

import random
from collections.abc import Sequence

from evigraph.ingest.embedding import LENGTH_SLACK, LENGTH_SPREAD, embed_all, embed_all_with_spans, length_slices
from evigraph.providers.embedders.base import Embedder


class LengthEmbedder(Embedder):
    """A real (if trivial) embedder whose vector records its text's length and its slice's size."""

    name = "length"
    batch_size = 8
    dimension = 2

    def __init__(self) -> None:
        self.slices: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.slices.append(list(texts))
        return [[float(len(t)), float(len(texts))] for t in texts]


def test_mixed_lengths_are_sliced_by_length_and_cover_every_text_once() -> None:
    rng = random.Random(7)
    texts = ["x" * rng.randint(1, 1200) for _ in range(64)]
    slices = list(length_slices(texts, 64))
    assert sorted(i for part in slices for i in part) == list(range(64))
    assert len(slices) > 1  # one slice of 64 would pad every text to the longest
    for part in slices:
        lengths = [len(texts[i]) for i in part]
        assert lengths == sorted(lengths)
        assert max(lengths) <= LENGTH_SPREAD * min(lengths) + LENGTH_SLACK


def test_short_names_share_full_slices() -> None:
    names = ["Paris", "Marie Curie", "IBM", "United Nations", "Bo"] * 20
    slices = list(length_slices(names, 64))
    assert [len(p) for p in slices] == [64, 36]


def test_vectors_come_back_in_the_order_of_the_texts() -> None:
    embedder = LengthEmbedder()
    texts = ["a" * n for n in (500, 3, 90, 7, 1000, 40, 3, 650)]
    vectors = embed_all(embedder, texts)
    assert [v[0] for v in vectors] == [float(len(t)) for t in texts]
    assert all(len(s) <= embedder.batch_size for s in embedder.slices)
    assert len(embedder.slices) > 1
    spans = [[(0, 1)] for _ in texts]
    passages, pooled = embed_all_with_spans(embedder, texts, spans)
    assert [v[0] for v in passages] == [float(len(t)) for t in texts]
    assert all(len(p) == 1 for p in pooled)
