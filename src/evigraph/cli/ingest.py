"""`evigraph ingest`: what it shows while it runs, how Ctrl-C stops it, who may read meanwhile.

One object, as the three meet: a Ctrl-C acknowledgement and the per-file lines must be printed
around the bar, and serving reads starts when the ingest tells its progress that the store is open.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from evigraph.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    embedder_arg,
    llm_arg,
    print_json,
    spend_line,
)
from evigraph.display import display_name, display_text
from evigraph.ingest.cancel import Cancellation, stop_on_interrupt
from evigraph.ingest.progress import IngestProgress, ProgressBar
from evigraph.models import DocumentOutcome, IngestReport

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


async def ingest(args: argparse.Namespace) -> int:
    """`evigraph ingest`: the files into the knowledge base, a line per document, Ctrl-C a clean stop."""
    from evigraph.kb import KnowledgeBase

    shown = not (args.quiet or args.json)
    console = IngestConsole(bar=shown and sys.stderr.isatty(), print_outcome=print_outcome if shown else None)
    with console.interrupts():  # until the database is closed, so no Ctrl-C lands inside the engine
        kb = KnowledgeBase(
            args.db,
            engine=args.engine,
            chunker=args.chunker,
            extractor=args.extractor,
            max_file_bytes=max(1, int(args.max_file_mb * 1024 * 1024)),
            embedder=embedder_arg(args),
            llm=llm_arg(args),
        )
        async with kb:
            return await _run(kb, args, console)


async def _run(kb: KnowledgeBase, args: argparse.Namespace, console: IngestConsole) -> int:
    async with console.serving(kb):  # `status` and `search` from other processes are answered meanwhile
        try:
            report = await kb.ingest(
                args.paths,
                progress=console,
                reextract=args.reextract,
                cancellation=console.cancellation,
                include=args.include,
                exclude=args.exclude,
                encoding=args.encoding,
                max_llm_tokens=args.max_llm_tokens,
            )
        finally:
            console.close()
    await kb.save_indexes(console.saving_indexes)  # what the close would do, with a progress line
    stopped = console.cancellation.cancelled
    if args.json:
        payload: dict[str, Any] = {
            "documents": [d.model_dump(mode="json", include={"key", "status", "error"}) for d in report.documents],
            "skipped": report.skipped,
            "excluded": report.excluded,
        }
        if stopped:
            payload["interrupted"] = True
        if report.llm is not None:
            payload["llm"], payload["left"] = report.llm.model_dump(), report.left
        print_json(payload)
    else:
        _print_report(report)
    if stopped:
        written = sum(d.status in ("created", "updated") for d in report.documents)
        print(
            f"interrupted: {written} documents written in this run are kept; run the same command again to "
            "ingest the rest",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK if report.ok and not report.left else EXIT_FAILED


def print_outcome(d: DocumentOutcome) -> None:
    """One document's line, printed as soon as it is done (see `IngestConsole`)."""
    if d.status == "failed":
        print(f"failed     {display_name(d.key)}: {display_text(d.error or '')}", file=sys.stderr)
    else:
        detail = (
            f"{d.chunks} passages"
            if d.status == "unchanged"
            else (f"{d.chunks} passages, {d.entities} entities, {d.relations} relations")
        )
        print(f"{d.status.value:<10} {display_name(d.key)} ({detail})")


def _print_report(report: IngestReport) -> None:
    """What follows the per-document lines, which were printed as each document finished."""
    counts = report.counts()
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    print(f"{len(report.documents)} documents: {summary or 'nothing to do'}", file=sys.stderr)
    if report.skipped:
        from evigraph.ingest.sources import describe_extensions

        types = display_text(describe_extensions(report.skipped))
        files = "file" if report.skipped_total == 1 else "files"
        print(
            f"skipped {report.skipped_total} {files} no loader reads: {types} (name a file to ingest it as text)",
            file=sys.stderr,
        )
    if report.excluded:
        files = "file" if report.excluded == 1 else "files"
        print(f"excluded {report.excluded} {files} by --include/--exclude", file=sys.stderr)
    if report.llm is not None:
        print(f"llm: {spend_line(report.llm)}", file=sys.stderr)
    if report.left:
        print(
            f"stopped at the LLM token ceiling ({report.llm.max_tokens if report.llm else 0:,}): {len(report.left)} "
            "documents not ingested; run again (with a higher --max-llm-tokens) to ingest them",
            file=sys.stderr,
        )
