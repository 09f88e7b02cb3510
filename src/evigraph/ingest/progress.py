"""Watching a long ingest: how far it got, and each document's outcome as soon as it is final.

A batch of 64 documents spends minutes in extraction and embedding before any of it is written,
so a bar that moved only when a batch was written sat still for minutes (64/251 for 7 minutes with
MiniLM). Each document is one unit of the bar, shared among its stages (`Shares`): it moves when
a batch is chunked, after each embedding slice, when extraction ends, and the outcome (written,
unchanged or failed) completes it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from evigraph.models import DocumentOutcome

CHUNKED = 0.1
EXTRACTED = 0.3
EMBEDDED = 0.3
"""Shares of a document credited as its stages end; what is left is credited by its outcome (the
write, the slowest stage after embedding when the engine updates its full-text indexes). Without
an embedder, extraction takes the embedding share too."""


class IngestProgress:
    """What a long ingest tells whoever watches it; override the methods you need.

    `start` and `finished` run in the event loop's thread; `advance` may also come from the
    pipeline's worker threads (chunking, embedding).
    """

    def start(self, total: int) -> None:
        """An ingest of about `total` documents begins (the store is open); a record file may hold more."""

    def advance(self, documents: float) -> None:
        """`documents` more worth of work is done, in fractions of documents."""

    def finished(self, outcomes: Sequence[DocumentOutcome]) -> None:
        """These documents are done: written (each batch once its transaction committed), unchanged or failed."""

    def close(self) -> None:
        """The ingest is over."""


class Shares:
    """Each document's share of the bar, so stages move it and its outcome completes it exactly once.

    Thread-safe: embedding slices credit documents from a worker thread.
    """

    def __init__(self, progress: IngestProgress) -> None:
        self._progress = progress
        self._done: dict[str, float] = {}
        self._lock = threading.Lock()

    def credit(self, shares: Iterable[tuple[str, float]]) -> None:
        """Add each (document key, share); a document never reaches 1 before its outcome."""
        moved = 0.0
        with self._lock:
            for key, share in shares:
                old = self._done.get(key, 0.0)
                new = min(old + share, 0.99)
                self._done[key] = new
                moved += new - old
        if moved > 0:
            self._progress.advance(moved)

    def complete(self, key: str) -> None:
        with self._lock:
            rest = 1.0 - self._done.pop(key, 0.0)
        self._progress.advance(rest)


class ProgressBar(IngestProgress):
    """A tqdm bar on stderr: documents done out of documents found, moving within a batch.

    Several ingests watched by one bar (a files ingest runs one per plan of strategies) add up
    their totals; a record file raises the total as it is read.
    """

    def __init__(self) -> None:
        self._bar: Any = None
        self._lock = threading.Lock()

    def start(self, total: int) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.total += total
                self._bar.refresh()
                return
            self._bar = _document_bar(total)

    def advance(self, documents: float) -> None:
        with self._lock:
            bar = self._bar
            if bar is None:
                return
            bar.update(documents)
            if bar.total is not None and bar.n > bar.total + 1e-6:
                bar.total = round(bar.n + 0.5)
                bar.refresh()

    @contextlib.contextmanager
    def printing(self) -> Iterator[None]:
        """Print lines to stdout or stderr inside: the bar is lifted first and drawn again after,
        so a line never lands in the middle of it."""
        if self._bar is None:
            yield
            return
        from tqdm import tqdm

        with tqdm.external_write_mode(file=sys.stdout):
            yield

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None


def _document_bar(total: int) -> Any:
    """A tqdm bar that counts whole documents done, though it moves by fractions of them.

    tqdm prints a float count as it is (`63.300000000000004/251`); the count shown is the
    documents whose work is complete, the bar itself moves with every stage.
    """
    from tqdm import tqdm

    class DocumentBar(tqdm):  # type: ignore[misc]  # tqdm is untyped
        @property
        def format_dict(self) -> dict[str, Any]:
            shown = dict(super().format_dict)
            shown["n_fmt"] = str(int(shown["n"] + 1e-6))
            return shown

    return DocumentBar(
        total=total,
        unit="doc",
        desc="ingest",
        file=sys.stderr,
        dynamic_ncols=True,
        leave=False,
        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]",  # reads n_fmt
    )
