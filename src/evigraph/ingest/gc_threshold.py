"""Fewer garbage collections while an ingest or a retrieve runs, so work that frees nothing is not done.

An ingest allocates a batch's objects (chunks, extracted models, parameter rows: tens of
thousands of containers for a 64-document batch), writes them, and frees them, nearly all by
reference counting. CPython 3.11 collects its youngest generation every 700 allocations, so a
batch still being built is scanned again and again, and what survives two scans is promoted to
the oldest generation, whose growth soon sets off full collections that walk the whole heap.
None of that work finds garbage.

Raising the youngest generation's threshold above what one batch allocates lets the batch die
before a collection sees it: 30,000 one-passage records into FalkorDB, rules extractor, the
ingesting process used 47 s of CPU with the default threshold, 37 s at 10,000, 32 s at 100,000
(and 35 s with full collections alone turned off: a third of the cost was walking the heap).
Cyclic garbage waits longer to be freed; 100,000 small objects are a few megabytes at most.

A process's first retrieve is the same story: it loads the embedder and spaCy and builds the
retrieval indexes, objects that all live on, so every collection meanwhile walks them and frees
nothing. A cold `evigraph search` on the hotpotqa dev corpus (1,942 passages) spent 1.1-1.2 s of
its 4.3 s in 540-610 collections without an embedder, and 4.1-5.4 s of 19-24 s with MiniLM;
with the raised threshold around retrieve, 0.2-0.3 s and 1.7 s.

The setting is the process's, so it is raised only while an ingest or a retrieve runs, back to
what it was once the last concurrent one ends, and never lowered: a host that chose a higher
threshold keeps it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

YOUNG_THRESHOLD = 100_000
"""Allocations between collections of the youngest generation during an ingest (CPython's
default is 700); the module docstring has the measurement."""

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None  # the thresholds before the first ingest raised them


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Inside, the youngest generation is collected at most every `YOUNG_THRESHOLD` allocations."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = _raise()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _saved is not None:
                # Someone who set their own thresholds meanwhile keeps them.
                if gc.get_threshold() == (YOUNG_THRESHOLD, _saved[1], _saved[2]):
                    gc.set_threshold(*_saved)
                _saved = None


def collect_rarely() -> None:
    """For a process that only ingests (the extraction worker): the raised threshold for good."""
    _raise()


def _raise() -> tuple[int, int, int] | None:
    """Raise the youngest generation's threshold unless it is higher already; the thresholds
    before, when it was raised."""
    young, middle, old = gc.get_threshold()
    if young >= YOUNG_THRESHOLD:
        return None
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    return (young, middle, old)
