"""`evigraph ingest-code`: the structure of source code into the knowledge base (`kb.ingest_code`)."""

from __future__ import annotations

import argparse
import sys

from evigraph.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_json
from evigraph.cli.options import Verbs
from evigraph.display import display_name, display_text


def add_parsers(verbs: Verbs) -> None:
    parser = verbs.add("ingest_code", run=ingest_code, aliases=["ingest-code"])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a repository's folder, a part of it, or a file")
    parser.add_argument("--no-calls", action="store_true", help="skip CALLS resolution (imports and inheritance only)")
    parser.add_argument(
        "--max-file-kb",
        type=int,
        default=1024,
        metavar="N",
        help="skip (and report) larger source files (default 1024)",
    )


async def ingest_code(args: argparse.Namespace) -> int:
    """ingest the structure of source code (modules, classes, functions, imports, calls)

    Ingest code structure: Repo, Module, Class and Function nodes (signatures, docstrings, line ranges, never
    bodies) and CONTAINS, IMPORTS, INHERITS and CALLS edges. Python always; TypeScript, JavaScript, Go, Rust and
    Java with `pip install 'evigraph[code]'`. Unchanged files are skipped, changed ones replaced, deleted ones
    removed. Each folder's git work tree is one repository."""
    from evigraph.kb import KnowledgeBase

    if args.max_file_kb <= 0:
        print(f"error: --max-file-kb must be positive, not {args.max_file_kb}", file=sys.stderr)
        return EXIT_USAGE
    async with KnowledgeBase(args.db, engine=args.engine) as kb:
        report = await kb.ingest_code(args.paths, calls=not args.no_calls, max_file_kb=args.max_file_kb)
    if args.json:
        print_json(report.model_dump())
    else:
        print(
            f"{', '.join(report.repos) or 'no repository'}: {report.files} files, {report.parsed} parsed, "
            f"{report.unchanged} unchanged, {report.removed} removed; nodes +{report.nodes_added} "
            f"-{report.nodes_removed}, edges +{report.edges_added} -{report.edges_removed}"
            + (f", {report.links_text()}" if report.passages_linked else "")
        )
        for issue in report.too_large:
            print(f"skipped {display_name(issue.path)}: {display_text(issue.error)}", file=sys.stderr)
        for issue in report.failed:
            print(f"failed {display_name(issue.path)}: {display_text(issue.error)}", file=sys.stderr)
    nothing = not report.parsed and not report.unchanged and not report.removed
    return EXIT_FAILED if report.failed and nothing else EXIT_OK
