"""`evigraph delete`, `check`, `reembed` and `doctor`: keeping a knowledge base, and the machine
it runs on, in order."""

from __future__ import annotations

import argparse
import json
import os
import sys

from evigraph.cli.common import EXIT_FAILED, EXIT_OK, embedder_arg, print_json, version
from evigraph.cli.options import Verbs, embedder_option, json_option
from evigraph.display import display_name, display_text


def add_parsers(verbs: Verbs) -> None:
    embedder_option(verbs.add("reembed", run=reembed), required=True)
    delete_parser = verbs.add("delete_document", run=delete_document, aliases=["delete"])
    delete_parser.add_argument("key", metavar="KEY", help="document key as printed by ingest, or the file's path")
    migrate_parser = verbs.add("migrate", run=migrate)
    migrate_parser.add_argument(
        "folders",
        nargs="*",
        metavar="[NAME=]FOLDER",
        help="folder as the old keys spell it (it may have moved since); its documents are keyed file:NAME/... "
        "(NAME: the folder's name). Without any, list the folders whose documents still have absolute keys",
    )
    check_parser = verbs.add("check", run=check)
    check_parser.add_argument("--repair", action="store_true", help="fix what can be fixed, then check again")
    json_option(verbs.add("doctor", run=doctor, opens_kb=False))


async def delete_document(args: argparse.Namespace) -> int:
    """remove a document and what only it mentioned

    Remove a document, its passages and the entities only it mentioned. KEY is the key ingest printed (list them
    with `evigraph status --documents`) or the file's path. Exit 1 if there is none."""
    from evigraph.kb import KnowledgeBase

    key = args.key
    async with KnowledgeBase(args.db, engine=args.engine) as kb:
        if not key.startswith("file:") and os.path.isfile(key):
            key = await kb.file_key(key)
        deleted = await kb.delete_document(key, missing_ok=True)
    if args.json:
        print_json({"key": key, "deleted": deleted})
    elif deleted:
        print(f"deleted {display_name(key)}")
    else:
        print(
            f"error: no document with key {key!r} (list keys with `evigraph status --documents`)",
            file=sys.stderr,
        )
    return EXIT_OK if deleted else EXIT_FAILED


async def migrate(args: argparse.Namespace) -> int:
    """rename documents keyed by absolute path to keys under a named root, without re-ingesting

    Keys from before roots were `file:` + an absolute path. `evigraph ingest FOLDER` renames those of the
    files it finds; this renames the documents under folders that moved before they were ingested again,
    keeping passages, vectors and decisions. Exit 1 when absolute keys remain and no folder was named."""
    from evigraph.kb import KnowledgeBase

    async with KnowledgeBase(args.db, engine=args.engine, read_only=not args.folders) as kb:
        report = await kb.migrate_keys(args.folders)
    if args.json:
        print_json(report.model_dump())
    elif not args.folders:
        for folder, n in report.legacy.items():
            print(f"{n:>6}  {display_text(folder)}")
        fix = "run `evigraph migrate FOLDER` (or NAME=FOLDER) for the folders that were ingested"
        print(
            f"{sum(report.legacy.values())} documents keyed by absolute path; {fix}"
            if report.legacy
            else "every file key is already relative to a root",
            file=sys.stderr,
        )
    else:
        for name, folder in report.roots.items():
            print(f"root {display_text(name)}: {display_text(folder)}", file=sys.stderr)
        print(f"renamed {len(report.renamed)} documents", file=sys.stderr)
    return EXIT_FAILED if report.legacy else EXIT_OK


async def check(args: argparse.Namespace) -> int:
    """look for damage a crash left (ghost edges, orphans, missing indexes); exit 1 if any remains"""
    from evigraph.kb import KnowledgeBase

    async with KnowledgeBase(args.db, engine=args.engine, read_only=not args.repair) as kb:
        report = await kb.check(repair=args.repair)
    if args.json:
        print_json(report.model_dump() | {"ok": report.ok})
        return EXIT_OK if report.ok else EXIT_FAILED
    for problem in report.found:
        examples = ", ".join(json.dumps(e, ensure_ascii=False) for e in problem.examples)
        print(f"found     {problem.kind}: {problem.count} ({problem.detail}; e.g. {examples})")
    for kind, count in report.repaired.items():
        print(f"repaired  {kind}: {count}")
    if report.ok:
        print("ok: no problems remain" if report.found else "ok: no problems found")
        return EXIT_OK
    left = ", ".join(f"{p.kind} {p.count}" for p in report.remaining)
    hint = "" if args.repair else "; run `evigraph check --repair`"
    print(f"problems remain: {left}{hint}", file=sys.stderr)
    return EXIT_FAILED


async def reembed(args: argparse.Namespace) -> int:
    """drop every passage vector and embed again

    Drop every stored vector and embed all passages, sentences and entity names with --embedder; the knowledge base
    then records that embedder. Use it to switch models."""
    from evigraph.kb import KnowledgeBase

    async with KnowledgeBase(args.db, engine=args.engine, embedder=embedder_arg(args)) as kb:
        count = await kb.reembed()
    print_json({"embedded": count}) if args.json else print(f"embedded {count} passages")
    return EXIT_OK


def doctor(args: argparse.Namespace) -> int:
    """what this installation can do: extractors, embedders, MCP, LLM, engines, and how to add the rest"""
    from evigraph.doctor import doctor

    report = doctor()
    if args.json:
        print_json(report.model_dump())
        return EXIT_OK
    print(f"evigraph {version()} on Python {report.python}")
    for c in report.checks:
        print(f"{'ok' if c.ok else '--':<3} {c.area:<10} {c.name:<40} {display_text(c.detail)}")
        if c.hint:
            print(f"{'':<15}{'':<40} fix: {display_text(c.hint)}")
    return EXIT_OK
