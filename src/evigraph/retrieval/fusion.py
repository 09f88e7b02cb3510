"""Reciprocal-rank fusion and the per-label cap.

RRF needs no score calibration between paths (BM25 scores and cosines live on different
scales), only ranks; a weight per list lets weaker signals, such as passages reached through
the graph, vote without outvoting direct matches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

RRF_K = 60


@dataclass
class Fused(Generic[K]):
    key: K
    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)


def rrf(
    ranked: Mapping[str, Sequence[K]], weights: Mapping[str, float] | None = None, k: int = RRF_K
) -> list[Fused[K]]:
    """Fuse ranked lists by name; an item's score is the weighted sum of 1 / (k + rank) over lists."""
    fused: dict[K, Fused[K]] = {}
    for name, items in ranked.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, key in enumerate(dict.fromkeys(items), start=1):
            entry = fused.setdefault(key, Fused(key))
            contribution = weight / (k + rank)
            entry.scores[name] = contribution
            entry.score += contribution
    return sorted(fused.values(), key=lambda f: -f.score)


def cap_per_label(items: Sequence[T], label: Callable[[T], str], cap: int, limit: int) -> list[T]:
    """The first `limit` items, no label taking more than `cap` until other labels had their turn.

    Items over the cap are not dropped: they backfill, in rank order, the slots no other label
    could use. `cap` <= 0 disables the cap.
    """
    if cap <= 0:
        return list(items[:limit])
    turns, overflow = split_by_cap(items, label, cap)
    chosen = [*turns[:limit], *overflow[: max(0, limit - len(turns))]]
    order = {id(x): i for i, x in enumerate(items)}
    return sorted(chosen, key=lambda x: order[id(x)])


def split_by_cap(items: Sequence[T], label: Callable[[T], str], cap: int) -> tuple[list[T], list[T]]:
    """`items` (best first) as the first `cap` of each label, then the rest, each part in rank order."""
    taken: dict[str, int] = defaultdict(int)
    turns: list[T] = []
    overflow: list[T] = []
    for item in items:
        key = label(item)
        taken[key] += 1
        (turns if taken[key] <= cap else overflow).append(item)
    return turns, overflow
