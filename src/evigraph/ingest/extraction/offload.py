"""Running CPU-bound extraction in a worker process, beside the ingest instead of under its GIL.

Rule extraction is pure Python and was 62% of the processing time of an ingest without an
embedder (3,000 passages, profiled). In a worker thread it still holds the one interpreter lock
the rest of the ingest needs: chunking, resolution and the Python half of the store's writes all
waited on it, so a 2-core machine ran the ingest on about one core. A worker process gives
extraction its own interpreter, and the ingest's other work runs beside it.

A batch smaller than `MIN_OFFLOAD_CHUNKS` stays in a thread: sending it costs more than it saves,
and a small ingest (a test, one file) never starts a process. The worker is started with `spawn`,
which is safe beside the engine's own threads, and once per Python process; it holds no state
between batches. If it dies, the batch runs in a thread and the next batch starts a new worker.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

MIN_OFFLOAD_CHUNKS = 256
"""Passages a batch needs before it goes to the worker process. Pickling a batch and its graphs
both ways costs about a tenth of extracting them, and starting the worker ~0.5 s, once."""

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def _worker_pool() -> ProcessPoolExecutor | None:
    """The shared worker process, or None on a one-core machine (nothing to run beside)."""
    global _pool
    if (os.cpu_count() or 1) < 2:
        return None
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def _discard(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


async def run_offloaded(fn: Callable[..., T], *args: object, chunks: int) -> T:
    """`fn(*args)` in the worker process when the batch holds `chunks` >= `MIN_OFFLOAD_CHUNKS`
    passages, else in a thread. `fn` and its arguments must pickle (a module-level function)."""
    pool = _worker_pool() if chunks >= MIN_OFFLOAD_CHUNKS else None
    if pool is not None:
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
        except BrokenProcessPool:
            log.warning("the extraction worker process died; this batch runs in a thread")
            _discard(pool)
    return await asyncio.to_thread(fn, *args)
