"""`evigraph compact`: give back the space deletes and updates left in the knowledge base file.

The sizes before and after are the point of the verb, so they are its output; a bar on stderr
shows the copy when it takes longer than a moment (a 293 MB knowledge base takes ~20 s).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evigraph.cli.options import Verbs
from evigraph.display import display_name, display_text

_STAGES = {"copy": ("copying", "row"), "index": ("indexing", "index"), "verify": ("verifying", "table")}
BAR_DELAY_S = 1.0
"""A compaction quicker than this (a small knowledge base takes about a second) shows no bar."""


def add_parsers(verbs: Verbs) -> None:
    verbs.add("compact", run=compact)


async def compact(args: argparse.Namespace) -> int:
    """give back the disk space deletes and updates left in the knowledge base file

    Rewrite the knowledge base into a new file beside it, check that every row is there, then swap the files; on any
    failure the old file is kept. The database engine never shrinks its file by itself. Needs the file to itself:
    stop a running `evigraph mcp` or ingest on it first."""
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import KnowledgeBase

    bar = CompactBar() if not args.json and sys.stderr.isatty() else None
    try:
        async with KnowledgeBase(args.db, engine=args.engine) as kb:
            report = await kb.compact(progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print_json(report.model_dump() | {"saved": report.saved})
    elif report.replaced:
        smaller = 100 * report.saved / report.bytes_before if report.bytes_before else 0
        print(
            f"compacted {display_name(report.db)}: {_mb(report.bytes_before)} -> {_mb(report.bytes_after)} "
            f"({smaller:.0f}% smaller; {report.rows} rows copied in {report.seconds:.1f} s)"
        )
    else:
        print(
            f"{display_name(report.db)}: {_mb(report.bytes_before)} -> {_mb(report.bytes_after)}, already compact "
            "(a rewrite would not be smaller); nothing changed"
        )
    if report.reopen_error:  # done all the same: the file on disk is the compacted one
        print(
            f"note: the compacted file is in place and complete; this process could not open it again "
            f"afterwards: {display_text(report.reopen_error)}",
            file=sys.stderr,
        )
    return EXIT_OK


class CompactBar:
    """One tqdm bar per stage on stderr, each shown once it has run for `BAR_DELAY_S`.

    Called from the compaction's worker thread, one call at a time.
    """

    def __init__(self) -> None:
        self._bar: Any = None
        self._stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            from tqdm import tqdm

            self.close()
            label, unit = _STAGES.get(stage, (stage, "step"))
            self._bar = tqdm(
                total=total,
                desc=f"compact: {label}",
                unit=unit,
                file=sys.stderr,
                leave=False,
                delay=BAR_DELAY_S,
                dynamic_ncols=True,
            )
            self._stage = stage
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
