"""What one question's graph ranking reads: the immutable `Snapshot` of the entity-passage graph
and its vectors, and the `Walk` matrix PageRank multiplies by.

Apart from the index that builds them (`ranking_index`) and the files that save them
(`ranking_files`), both of which read these types, so neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Snapshot:
    """Arrays one question reads; node ids: passages 0..P-1, then entities P..P+E-1."""

    passages: Sequence[str]  # chunk id per passage row
    alive: Any  # bool[P]
    entity_keys: Sequence[str]  # normalised name per entity node
    entity_names: Sequence[str]
    entity_vectors: Any  # float32[E, d], zero rows for entities without a vector
    entity_usable: Any  # bool[E]: has a vector and a live passage
    passage_count: Any  # float[E]: live passages mentioning the entity
    sentence_vectors: Any  # float32[S, d]
    sentence_entities: Sequence[list[int]]  # entity rows per sentence
    entity_sentences: Sequence[list[int]]  # sentence rows per entity (live passages only)
    edge_entity: Any  # int[M] entity row of each passage-entity edge
    edge_passage: Any  # int[M]
    edge_count: Any  # float[M] mentions of the entity in the passage
    walk: Walk  # [N, N] over compressed rows: walk[to, from] = probability of stepping from `from` to `to`
    row_of: Mapping[str, int]
    node_of: Mapping[str, int]  # normalised entity name -> entity node

    @property
    def empty(self) -> bool:
        return not self.passages or not len(self.sentence_vectors)


SCIPY_AT_ONCE_ENTRIES = 1_000_000
"""A walk with this many entries imports scipy for its first product. Importing scipy.sparse costs a
process about 0.11 s (it pulls numpy.f2py, testing, random and ma along); its CSR product saves
about 4 ns per entry against the numpy one (2M entries: 4.4 against 13.2 ms a product), times the
20 products of a question: from about 1.4M entries one question repays the import."""


def csr_walk(data: Any, indices: Any, indptr: Any, n: int) -> Walk:
    """The walk over compressed rows; a large one multiplies in scipy from the start."""
    walk = Walk(data, indices, indptr, n)
    if len(data) >= SCIPY_AT_ONCE_ENTRIES:
        walk.use_scipy()
    return walk


class Walk:
    """`walk @ x` over compressed rows (scipy's CSR arrays: `data`, `indices`, `indptr`), in numpy
    until `use_scipy`, then in scipy's CSR product, about three times faster.

    Numpy first, because a process asking one question (a cold `evigraph search`) spends more on
    importing scipy than the faster products save it on a walk below `SCIPY_AT_ONCE_ENTRIES`; a
    process that asks again is a server or a script, and switches for the rest of its questions
    (`GraphStage.rank`). scipy is optional (145 MB, a third of the light install): without it the
    products stay in numpy, the same numbers.
    """

    def __init__(self, data: Any, indices: Any, indptr: Any, n: int) -> None:
        self.data, self.indices, self.indptr, self.shape = data, indices, indptr, (n, n)
        self._rows: Any = None
        self._csr: Any = None

    @staticmethod
    def csr_of(to: Any, source: Any, prob: Any, n: int) -> tuple[Any, Any, Any]:
        """CSR arrays of the (to, source, prob) edges, rows in order."""
        import numpy as np

        order = np.lexsort((source, to))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(to, minlength=n), out=indptr[1:])
        return np.asarray(prob, dtype=np.float64)[order], np.asarray(source[order], dtype=np.int32), indptr

    @property
    def in_scipy(self) -> bool:
        return self._csr is not None

    def use_scipy(self) -> None:
        """Multiply in scipy from now on, where it is installed."""
        if self._csr is not None:
            return
        try:
            from scipy.sparse import csr_matrix  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            return
        self._csr = csr_matrix((self.data, self.indices, self.indptr), shape=self.shape, copy=False)

    def __matmul__(self, x: Any) -> Any:
        import numpy as np

        if self._csr is not None:
            return self._csr @ x
        if self._rows is None:
            self._rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        return np.bincount(self._rows, weights=self.data * x[self.indices], minlength=self.shape[0])
