"""The ingest's embedding slices: every text once, cut where padding costs more than a call, vectors back in order."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from evigraph.ingest.embedding import CALL_OVERHEAD_TOKENS, embed_all, length_slices, pool_all
from evigraph.providers.embedders.base import Embedder


class LengthEmbedder(Embedder):
    """A real (if trivial) embedder whose vector records its text's length and its slice's size."""

    name = "length"
    batch_size = 8
    dimension = 2

    def __init__(self, tokens: dict[str, int] | None = None) -> None:
        self.slices: list[list[str]] = []
        self.tokens = tokens

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.slices.append(list(texts))
        return [[float(len(t)), float(len(texts))] for t in texts]

    def token_lengths(self, texts: Sequence[str]) -> list[int] | None:
        return None if self.tokens is None else [self.tokens[t] for t in texts]


def cost(lengths: Sequence[int], slices: Sequence[Sequence[int]]) -> int:
    return sum(len(s) * max(lengths[i] for i in s) + CALL_OVERHEAD_TOKENS for s in slices)


def cheapest(lengths: Sequence[int], size: int) -> int:
    """Every cut of the sorted lengths into runs of at most `size`, tried one by one."""
    ordered = sorted(lengths)
    best = None
    for cuts in itertools.product((False, True), repeat=len(ordered) - 1):
        runs, run = [], [ordered[0]]
        for cut, n in zip(cuts, ordered[1:], strict=True):
            if cut:
                runs.append(run)
                run = []
            run.append(n)
        runs.append(run)
        if all(len(r) <= size for r in runs):
            total = sum(len(r) * r[-1] + CALL_OVERHEAD_TOKENS for r in runs)
            best = total if best is None else min(best, total)
    assert best is not None
    return best


def test_slices_cover_every_text_once_shortest_first_within_the_size() -> None:
    rng = random.Random(7)
    lengths = [rng.randint(3, 300) for _ in range(200)]
    slices = length_slices(lengths, 64)
    assert sorted(i for part in slices for i in part) == list(range(200))
    assert all(1 <= len(part) <= 64 for part in slices)
    flat = [lengths[i] for part in slices for i in part]
    assert flat == sorted(flat)
    assert len(slices) > 4  # mixed lengths are not padded into ceil(200 / 64) slices
    naive = [sorted(range(200), key=lambda i: lengths[i])[k : k + 64] for k in range(0, 200, 64)]
    assert cost(lengths, slices) < cost(lengths, naive)


def test_the_cut_is_the_cheapest_of_all_cuts() -> None:
    rng = random.Random(11)
    for _ in range(40):
        lengths = [rng.choice((3, 4, 5, 9, 40, 41, 120, 300)) for _ in range(rng.randint(1, 11))]
        size = rng.randint(1, 6)
        assert cost(lengths, length_slices(lengths, size)) == cheapest(lengths, size)


def test_texts_of_one_length_fill_whole_slices() -> None:
    assert sorted(len(p) for p in length_slices([7] * 100, 64)) == [36, 64]
    assert length_slices([], 64) == []


def test_slices_follow_the_models_tokens_not_characters() -> None:
    """A rare word is many pieces in few characters: the model's own count decides."""
    tokens = {"Zyx": 300, "Qwv": 300, "a b c d e f g h i j k l": 8, "m n o p q r s t u v w": 8}
    embedder = LengthEmbedder(tokens)
    embed_all(embedder, list(tokens))
    assert sorted(sorted(s) for s in embedder.slices) == [["Qwv", "Zyx"], sorted(list(tokens)[2:])]


def test_vectors_come_back_in_the_order_of_the_texts() -> None:
    embedder = LengthEmbedder()
    texts = ["a" * n for n in (500, 3, 90, 7, 1000, 40, 3, 650)]
    vectors = embed_all(embedder, texts)
    assert [v[0] for v in vectors] == [float(len(t)) for t in texts]
    assert all(len(s) <= embedder.batch_size for s in embedder.slices)
    assert len(embedder.slices) > 1
    spans = [[(0, 1)] for _ in texts]
    passages, pooled = pool_all(embedder, texts, spans)
    assert [v[0] for v in passages] == [float(len(t)) for t in texts]
    assert all(len(p) == 1 for p in pooled)
