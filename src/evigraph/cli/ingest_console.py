"""What `evigraph ingest` shows while it runs, how Ctrl-C stops it, who may read meanwhile.

One object, as the three meet: a Ctrl-C acknowledgement and the per-file lines must be printed
around the bar, and serving reads starts when the ingest tells its progress that the store is open.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from evigraph.ingest.cancel import Cancellation, stop_on_interrupt
from evigraph.ingest.progress import IngestProgress, ProgressBar
from evigraph.models import DocumentOutcome

if TYPE_CHECKING:
    from evigraph.cli.serving import IngestServing
    from evigraph.kb import KnowledgeBase


class IngestConsole(IngestProgress):
    """The bar (when wanted), a line per document as soon as it is done, and Ctrl-C as a clean stop.

    Lines are flushed one by one, so a pipe or a log sees each file as it finishes, not when the
    buffer fills or the ingest ends.
    """

    def __init__(self, *, bar: bool, print_outcome: Callable[[DocumentOutcome], None] | None) -> None:
        self.cancellation = Cancellation()
        self._bar = ProgressBar() if bar else None
        self._print_outcome = print_outcome
        self._serving: IngestServing | None = None
        self._saving_since = 0.0

    @contextlib.contextmanager
    def interrupts(self) -> Iterator[None]:
        """Inside, Ctrl-C stops the ingest cleanly instead of raising; keep it around the database's
        close too, so no Ctrl-C can land while a thread is inside the engine."""
        with stop_on_interrupt(self.cancellation, self.say):
            yield

    @contextlib.asynccontextmanager
    async def serving(self, kb: KnowledgeBase) -> AsyncIterator[None]:
        """Answer other evigraph processes' reads of `kb` once the ingest has opened it, until the end."""
        from evigraph.cli.serving import IngestServing

        self._serving = IngestServing(kb)
        try:
            yield
        finally:
            await self._serving.close()

    def say(self, text: str) -> None:
        with self._printing():
            print(text, file=sys.stderr, flush=True)

    # -- IngestProgress ----------------------------------------------------------------------

    def start(self, total: int) -> None:
        if self._serving is not None:
            self._serving.start()
        if self._bar is not None:
            self._bar.start(total)

    def advance(self, documents: float) -> None:
        if self._bar is not None:
            self._bar.advance(documents)

    def finished(self, outcomes: Sequence[DocumentOutcome]) -> None:
        if self._print_outcome is None:
            return
        with self._printing():
            for outcome in outcomes:
                self._print_outcome(outcome)
            sys.stdout.flush()
            sys.stderr.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def saving_indexes(self, name: str, done: int, total: int) -> None:
        """The retrieval indexes being saved after the ingest (`KnowledgeBase.save_indexes`): a
        line that counts them, so minutes of saving at 100,000 passages are not a silent exit."""
        if self._print_outcome is None:
            return
        now = time.perf_counter()
        if done == 0:
            self._saving_since = now
        elapsed = now - self._saving_since
        if done < total:
            text = f"saving retrieval indexes {done + 1}/{total}: {name} ({elapsed:.0f} s)"
        else:
            text = f"saved retrieval indexes in {elapsed:.1f} s"
        if sys.stderr.isatty():  # one line, redrawn in place
            end = "\n" if done == total else ""
            print(f"\r\033[K{text}", end=end, file=sys.stderr, flush=True)
        elif done == total or elapsed >= 1.0:  # a log gets a line per index only once it takes a while
            print(text, file=sys.stderr, flush=True)

    def _printing(self) -> contextlib.AbstractContextManager[None]:
        return self._bar.printing() if self._bar is not None else contextlib.nullcontext()
