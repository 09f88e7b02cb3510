"""Indexes a store derives from the graph (both backends), and the in-process cache that holds them.

Three look-ups need structures the engine lacks: passages by vector similarity (exact cosine over
a matrix is faster than an approximate index below a few hundred thousand passages, and never
misses), entities by any of their names (the engine indexes only primary keys), and how many
passages hold a term (the full-text index keeps its document frequencies to itself). Each is
built from one query, saved beside the file (`store/saved_indexes.py`) so the next open reads it
instead, and dropped from the cache when a write changes the graph.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evigraph.models import normalize_name
from evigraph.store.base import TermCounts, VectorSearch
from evigraph.store.terms import passage_terms

VECTOR_CODECS = ("float32", "int8")
"""How passage vectors are held for search: `float32` (exact), or `int8`, each vector scaled to
its largest component and rounded to 127 steps, a quarter of the memory (`KnowledgeBase(
vector_codec=...)`, EVIGRAPH_VECTOR_CODEC); measured by bench/retrieval.py's evigraph+minilm-int8."""


@dataclass(frozen=True)
class VectorMatrix:
    ids: Sequence[str]
    matrix: Any  # numpy array, one L2-normalised row per id: float32, or int8 with `scales`
    scales: Any = None  # float32 per int8 row: its value = row * scale

    def search(self, vector: Iterable[float], limit: int) -> list[tuple[str, float]]:
        if not self.ids:
            return []
        return self._top(self._scores(vector), limit)

    def search_stats(self, vector: Iterable[float], limit: int) -> VectorSearch:
        """`search` with the mean and spread of every cosine the one product gave."""
        if not self.ids:
            return VectorSearch()
        scores = self._scores(vector)
        return VectorSearch(self._top(scores, limit), len(self.ids), float(scores.mean()), float(scores.std()))

    def _scores(self, vector: Iterable[float]) -> Any:
        import numpy as np

        query = np.asarray(list(vector), dtype=np.float32)
        if query.shape[0] != self.matrix.shape[1]:
            raise ValueError(f"query has {query.shape[0]} dimensions, the stored vectors {self.matrix.shape[1]}")
        if self.scales is None:
            return self.matrix @ query
        # Each int8 row widened as it is summed, never copied: widening the matrix in float32 blocks
        # took 37 ms and 51 MB a query at 100,000 x 384 (bench in the commit), this 16 ms and 0.4 MB.
        return np.einsum("ij,j->i", self.matrix, query, dtype=np.float32, casting="unsafe") * self.scales

    def _top(self, scores: Any, limit: int) -> list[tuple[str, float]]:
        return [(self.ids[i], score) for i, score in self._top_rows(scores, limit)]

    def nearest_rows(self, vector: Iterable[float], limit: int) -> list[tuple[int, float]]:
        """`search` by row number: for an index that keeps more per row than its id."""
        return self._top_rows(self._scores(vector), limit) if self.ids else []

    def _top_rows(self, scores: Any, limit: int) -> list[tuple[int, float]]:
        import numpy as np

        k = min(limit, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(i), float(scores[i])) for i in top]


def build_matrix(rows: Sequence[tuple[str, Sequence[float]]], codec: str = "float32") -> VectorMatrix:
    import numpy as np

    if not rows:
        return VectorMatrix([], np.zeros((0, 0), dtype=np.float32))
    return vector_matrix([cid for cid, _ in rows], np.asarray([vec for _, vec in rows], dtype=np.float32), codec)


def vector_matrix(ids: Sequence[str], matrix: Any, codec: str = "float32") -> VectorMatrix:
    """`matrix` (float32, a row per id, normalised here in place) held as `codec` says."""
    import numpy as np

    if not ids:
        return VectorMatrix([], np.zeros((0, 0), dtype=np.float32))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, 1, norms)
    if codec == "int8":
        peaks = np.abs(matrix).max(axis=1, keepdims=True)
        scales = np.where(peaks == 0, 1, peaks) / 127
        return VectorMatrix(ids, np.rint(matrix / scales).astype(np.int8), scales[:, 0].astype(np.float32))
    return VectorMatrix(ids, matrix)


def vector_codec(name: str | None) -> str:
    """`name`, else EVIGRAPH_VECTOR_CODEC, else float32; an unknown one is refused with the choices."""
    import os

    from evigraph.errors import ConfigurationError

    chosen = name or os.environ.get("EVIGRAPH_VECTOR_CODEC", "").strip() or "float32"
    if chosen not in VECTOR_CODECS:
        raise ConfigurationError(
            f"unknown vector codec {chosen!r}",
            hint=f"use one of {', '.join(VECTOR_CODECS)} (vector_codec=, EVIGRAPH_VECTOR_CODEC)",
        )
    return chosen


@dataclass(frozen=True)
class FactVectors:
    """Relations' fact vectors, a row per relation: its id, and where the graph index lists it
    (its first source passage, else "" and its source entity), so a search returns relations
    without the engine's scan of every relation to find them by id."""

    vectors: VectorMatrix
    chunks: Sequence[str]
    sources: Sequence[str]

    def nearest(self, vector: Iterable[float], limit: int) -> list[tuple[tuple[str, str, str], float]]:
        """(relation id, passage, source entity) of the `limit` facts nearest `vector`, with cosines."""
        return [
            ((self.vectors.ids[i], self.chunks[i], self.sources[i]), score)
            for i, score in self.vectors.nearest_rows(vector, limit)
        ]


FactRows = tuple[Sequence[str], Sequence[str], Sequence[str], Any]
"""Relations with a fact vector, as `ranking_reads.read_fact_vectors` gives them: their ids, first
source passages, source entities, and a float32 matrix of their vectors (None when none)."""


def build_fact_vectors(rows: FactRows, codec: str = "float32") -> FactVectors:
    ids, chunks, sources, matrix = rows
    return FactVectors(vector_matrix(ids, matrix, codec), chunks, sources)


@dataclass(frozen=True)
class TermIndex:
    """Term -> passages containing it, over every current passage (see `passage_terms`)."""

    passages: int
    frequencies: Mapping[str, int]

    def counts(self, terms: Iterable[str]) -> TermCounts:
        return TermCounts(self.passages, {t: self.frequencies.get(t, 0) for t in terms})


def build_term_index(texts: Iterable[str]) -> TermIndex:
    frequencies: Counter[str] = Counter()
    passages = 0
    for text in texts:
        frequencies.update(passage_terms(text))
        passages += 1
    return TermIndex(passages, frequencies)


@dataclass(frozen=True)
class NameIndex:
    """Normalised name or alias -> entity ids."""

    by_name: Mapping[str, list[str]]
    longest: int  # tokens in the longest name, to bound question n-grams

    def lookup(self, names: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in names:
            ids = self.by_name.get(normalize_name(name))
            if ids:
                out[name] = ids
        return out


def build_name_index(rows: list[tuple[str, str, list[str]]]) -> NameIndex:
    by_name: Mapping[str, list[str]] = defaultdict(list)
    longest = 1
    for eid, name, aliases in rows:
        for form in {name, *(aliases or [])}:
            key = normalize_name(form)
            if key and eid not in by_name[key]:
                by_name[key].append(eid)
                longest = max(longest, len(key.split()))
    return NameIndex(dict(by_name), longest)


class Cached:
    """Values computed on demand and dropped by `invalidate`; safe across threads.

    A value built from data a concurrent write has since changed is returned to its caller
    but not kept: the generation check drops it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, Any] = {}
        self._generation = 0

    def get(self, key: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._values:
                return self._values[key]
            generation = self._generation
        value = build()
        with self._lock:
            if generation == self._generation:
                self._values.setdefault(key, value)
        return value

    async def fetch(self, key: str, build: Callable[[], Any]) -> Any:
        """`get` from the event loop: a held value comes back at once, a build runs in a worker
        thread. A retrieve reads five of these caches; a thread hop for each held value cost
        about 0.3 ms apiece with the engine's threads contending for the GIL."""
        with self._lock:
            if key in self._values:
                return self._values[key]
        return await asyncio.to_thread(self.get, key, build)

    def drop(self, key: str) -> None:
        """Forget one value (its source changed) and keep the rest: fact vectors written after an
        ingest need not cost the full-text and graph indexes a rebuild."""
        with self._lock:
            self._values.pop(key, None)
            self._generation += 1

    def invalidate(self) -> None:
        with self._lock:
            self._values.clear()
            self._generation += 1
