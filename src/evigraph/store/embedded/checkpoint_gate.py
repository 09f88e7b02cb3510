"""Keeps the engine's commit-time checkpoint from giving up on a read transaction.

Kuzu 0.11.3 checkpoints inside a write transaction's COMMIT once its log has grown enough, and a
checkpoint first waits for every open transaction to end; after about 5 s it fails the COMMIT
("Timeout waiting for active transactions to leave the system before checkpointing") and the
write is rolled back (measured: one read transaction held open beside one write, 6.4 s to the
error). Reads that last that long are ordinary at scale: building the in-process indexes of a
100,000-passage knowledge base reads for seconds, and an ingest's own resolution reads overlap
its writes. Roughly one 10,000-passage ingest in eight lost a write to it (and rewrote it in
halves).

So a COMMIT waits here, in the process, for the read transactions already open to end, and new
ones wait for the COMMIT: the engine's checkpoint then finds none.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class CheckpointGate:
    """Many read transactions, or one COMMIT, at a time.

    A COMMIT that waits holds back new reads, so a steady stream of them cannot starve it. A
    thread already inside a read may open another (a nested read on a second connection) without
    waiting, or a waiting COMMIT and that thread would wait for each other. Take a connection
    before `reading`: making one takes the write lock, which the committing thread holds."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._committing = False
        self._depth = threading.local()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        depth: int = getattr(self._depth, "n", 0)
        if depth == 0:
            with self._changed:
                while self._committing:
                    self._changed.wait()
                self._readers += 1
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            if depth == 0:
                with self._changed:
                    self._readers -= 1
                    self._changed.notify_all()

    @contextlib.contextmanager
    def committing(self) -> Iterator[None]:
        """Only ever entered under the executor's write lock: one COMMIT at a time."""
        with self._changed:
            self._committing = True
            while self._readers:
                self._changed.wait()
        try:
            yield
        finally:
            with self._changed:
                self._committing = False
                self._changed.notify_all()
