"""Stopping a long ingest cleanly: a flag the pipeline reads between stages, and Ctrl-C turned into it.

A `KeyboardInterrupt` raised wherever the main thread happens to be cannot stop the work that
matters: chunking, embedding and the engine's writes run in worker threads, which Python cannot
interrupt. `asyncio.run` then waits for them on its way out (35-44 s for one embedding batch of 64
documents), and a second Ctrl-C during that wait tore through the shutdown while a thread was
still inside the engine, which once ended in a segfault. So Ctrl-C only sets a flag: the pipeline
checks it between stages and between embedding batches, drops the batch it was preparing (none of
it was written), lets a write already running commit or roll back as one transaction, and returns
what was written. Further presses are acknowledged and change nothing, so nothing can tear
through a thread that is inside the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


class IngestCancelled(Exception):
    """Raised inside the pipeline at a check point once a stop was asked; never leaves `IngestRun.run`."""


class Cancellation:
    """A request to stop an ingest, set from a signal handler or any thread, read by the pipeline's threads."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise `IngestCancelled` when a stop was asked; called where stopping loses nothing written."""
        if self._event.is_set():
            raise IngestCancelled


STOPPING = (
    "stopping after the step in progress (a few seconds): documents already written are kept, the batch being "
    "prepared is dropped; run the same command again to continue (unchanged files are skipped)"
)
STILL_STOPPING = (
    "still stopping: waiting for the step in progress (a database write or one embedding batch) to end so the "
    "database stays consistent; pressing Ctrl-C again changes nothing"
)


@contextlib.contextmanager
def stop_on_interrupt(cancellation: Cancellation, say: Callable[[str], None]) -> Iterator[bool]:
    """While inside, Ctrl-C (SIGINT) cancels `cancellation` and `say`s so at once, instead of raising.

    Runs in the event loop's thread: `say` may print. Yields False where the loop cannot take
    signal handlers (Windows, or not the main thread), where Ctrl-C keeps raising
    `KeyboardInterrupt` as before.
    """
    presses = 0

    def on_interrupt() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            cancellation.cancel()
            say(STOPPING)
        else:
            say(STILL_STOPPING)

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError, ValueError):
        yield False
        return
    try:
        yield True
    finally:
        loop.remove_signal_handler(signal.SIGINT)  # back to raising KeyboardInterrupt
