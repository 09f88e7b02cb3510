"""`evigraph ingest`: files, folders and globs into the knowledge base, a line per document as it
is done, Ctrl-C a clean stop. What it shows while it runs is `ingest_console.IngestConsole`, imported
when the verb runs, so declaring the verb loads no pydantic model."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from evigraph.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    embedder_arg,
    flag_values,
    llm_arg,
    print_json,
    spend_line,
)
from evigraph.cli.options import Verbs, embedder_option, llm_option
from evigraph.display import display_name, display_text
from evigraph.ingest.chunking import CHUNKERS
from evigraph.ingest.extraction import EXTRACTORS
from evigraph.ingest.resolution import RESOLVERS

if TYPE_CHECKING:
    from evigraph.cli.ingest_console import IngestConsole
    from evigraph.kb import KnowledgeBase
    from evigraph.models import DocumentOutcome, IngestReport

PASSED_ON = ("reextract", "include", "exclude", "encoding", "max_llm_tokens", "root_name")
"""Flags named as `KnowledgeBase.ingest`'s parameters, passed on as they are."""


def add_parsers(verbs: Verbs) -> None:
    parser = verbs.add("ingest", run=ingest)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file, folder or glob (quote globs)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no per-file lines")
    parser.add_argument("--chunker", default=None, choices=CHUNKERS.names(), help="default: structural")
    parser.add_argument(
        "--extractor",
        default=None,
        choices=EXTRACTORS.names(),
        help="entity extraction (default auto: spaCy when a model is installed, else rules)",
    )
    resolvers = "; ".join(f"{name}: {text}" for name, text in RESOLVERS.descriptions().items())
    parser.add_argument(
        "--resolver",
        default=None,
        choices=RESOLVERS.names(),
        help=f"how a document's entities are resolved (default exact): {resolvers}",
    )
    parser.add_argument("--max-file-mb", type=float, default=50.0, help="skip larger files (default 50)")
    parser.add_argument(
        "--reextract",
        action="store_true",
        help="process unchanged files too (after the ontology grew, or a knowledge base from an older release)",
    )
    embedder_option(parser)
    llm_option(parser)
    parser.add_argument(
        "--max-llm-tokens",
        type=int,
        default=None,
        metavar="N",
        help="LLM token ceiling (input + output) of this ingest: no call is sent that could pass it; finished "
        "documents are kept and the rest listed (default: none)",
    )
    for flag, verb in (("--include", "take only"), ("--exclude", "leave out")):
        parser.add_argument(
            flag,
            action="append",
            default=[],
            metavar="GLOB",
            help=f"{verb} files matching GLOB (repeatable, or comma-separated): matched against the file's "
            "name, its folders' names, and (for a GLOB with a /) its path relative to the folder walked; "
            "'*' crosses folders",
        )
    parser.add_argument(
        "--root",
        dest="root_name",
        default=None,
        metavar="NAME",
        help="name of the root the folder's keys start with (file:NAME/...; default: the folder's own name); "
        "the name of a root that lives elsewhere says this is that folder, moved or mounted here; "
        "one folder per call, as two folders under one name would share keys",
    )
    parser.add_argument(
        "--encoding",
        default=None,
        help="encoding of text files that are neither UTF-8 nor marked by a byte order mark, e.g. cp1251 "
        "(default: UTF-16 with its mark and Latin-1/cp1252 are recognised, other files fail with this hint)",
    )


async def ingest(args: argparse.Namespace) -> int:
    """ingest files, folders (recursively) and globs

    Ingest documents. Unchanged files are skipped; changed ones replace their old version."""
    from evigraph.cli.ingest_console import IngestConsole
    from evigraph.kb import KnowledgeBase

    shown = not (args.quiet or args.json)
    console = IngestConsole(bar=shown and sys.stderr.isatty(), print_outcome=print_outcome if shown else None)
    with console.interrupts():  # until the database is closed, so no Ctrl-C lands inside the engine
        kb = KnowledgeBase(
            args.db,
            engine=args.engine,
            chunker=args.chunker,
            extractor=args.extractor,
            resolver=args.resolver,
            max_file_bytes=max(1, int(args.max_file_mb * 1024 * 1024)),
            embedder=embedder_arg(args),
            llm=llm_arg(args),
        )
        async with kb:
            return await _run(kb, args, console)


async def _run(kb: KnowledgeBase, args: argparse.Namespace, console: IngestConsole) -> int:
    async with console.serving(kb):  # `status` and `search` from other processes are answered meanwhile
        try:
            options = flag_values(args, PASSED_ON)
            report = await kb.ingest(args.paths, progress=console, cancellation=console.cancellation, **options)
        finally:
            console.close()
    await kb.save_indexes(console.saving_indexes)  # what the close would do, with a progress line
    stopped = console.cancellation.cancelled
    if args.json:
        payload: dict[str, Any] = {
            "documents": [d.model_dump(mode="json", include={"key", "status", "error"}) for d in report.documents],
            "skipped": report.skipped,
            "excluded": report.excluded,
            "roots_moved": report.roots_moved,
            "renamed": report.renamed,
        }
        if stopped:
            payload["interrupted"] = True
        if report.llm is not None:
            payload["llm"], payload["left"] = report.llm.model_dump(), report.left
        if report.resolution is not None:
            payload["resolution"] = report.resolution.model_dump()
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
    for name, folder in report.roots_moved.items():
        print(f"root {display_text(name)} now at {display_text(folder)}: its files keep their keys", file=sys.stderr)
    if report.renamed:
        print(f"renamed {report.renamed} keys from absolute paths to their root's form", file=sys.stderr)
    if report.excluded:
        files = "file" if report.excluded == 1 else "files"
        print(f"excluded {report.excluded} {files} by --include/--exclude", file=sys.stderr)
    if report.llm is not None:
        print(f"llm: {spend_line(report.llm)}", file=sys.stderr)
    if report.resolution is not None:
        print(f"resolved with {display_text(report.resolution.line())}", file=sys.stderr)
        for error in report.resolution.errors:
            print(f"  resolution call failed: {display_text(error)}", file=sys.stderr)
    if report.left:
        print(
            f"stopped at the LLM token ceiling ({report.llm.max_tokens if report.llm else 0:,}): {len(report.left)} "
            "documents not ingested; run again (with a higher --max-llm-tokens) to ingest them",
            file=sys.stderr,
        )
