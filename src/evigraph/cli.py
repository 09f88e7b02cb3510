"""The `evigraph` command: thin verbs over `KnowledgeBase`, named as its methods are.

Only argparse and the small display helpers are imported up front, so `evigraph --help` answers
at once; each verb imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from evigraph.display import display_name, display_text
from evigraph.ingest.chunking import CHUNKERS
from evigraph.ingest.extraction import EXTRACTORS
from evigraph.providers.embedders import EMBEDDERS

if TYPE_CHECKING:
    from evigraph.cli_ingest import IngestConsole
    from evigraph.cli_serving import Reads
    from evigraph.kb import KnowledgeBase
    from evigraph.models import DocumentOutcome, IngestReport

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
EMBEDDER_HELP = f"{EMBEDDERS.choices} (default: $EVIGRAPH_EMBEDDER, else none)"


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `commands`, only those verbs get the options that need heavier imports.

    `evigraph --help` lists verbs, not their options, so it need not load the models the
    options are generated from; `main` passes the verb it was given.
    """
    parser = argparse.ArgumentParser(
        prog="evigraph",
        description="Local-first GraphRAG knowledge base: ingest documents into a graph, query it with citations.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=None, help="knowledge base file (default: $EVIGRAPH_DB, else ./evigraph.db)")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common.add_argument(
        "--engine",
        default="auto",
        choices=["auto", "kuzu", "ladybug"],
        help="embedded engine (default: kuzu)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ingest = sub.add_parser(
        "ingest",
        parents=[common],
        help="ingest files, folders (recursively) and globs",
        description="Ingest documents. Unchanged files are skipped; changed ones replace their old version.",
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="file, folder or glob (quote globs)")
    ingest.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no per-file lines")
    ingest.add_argument("--chunker", default=None, choices=CHUNKERS.names(), help="default: structural")
    ingest.add_argument(
        "--extractor",
        default=None,
        choices=EXTRACTORS.names(),
        help="entity extraction (default auto: spaCy when a model is installed, else rules)",
    )
    ingest.add_argument("--max-file-mb", type=float, default=50.0, help="skip larger files (default 50)")
    ingest.add_argument(
        "--reextract",
        action="store_true",
        help="process unchanged files too (after the ontology grew, or a knowledge base from an older release)",
    )
    ingest.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    for flag, verb in (("--include", "take only"), ("--exclude", "leave out")):
        ingest.add_argument(
            flag,
            action="append",
            default=[],
            metavar="GLOB",
            help=f"{verb} files matching GLOB (repeatable, or comma-separated): matched against the file's "
            "name, its folders' names, and (for a GLOB with a /) its path relative to the folder walked; "
            "'*' crosses folders",
        )
    ingest.add_argument(
        "--encoding",
        default=None,
        help="encoding of text files that are neither UTF-8 nor marked by a byte order mark, e.g. cp1251 "
        "(default: UTF-16 with its mark and Latin-1/cp1252 are recognised, other files fail with this hint)",
    )

    search = sub.add_parser(
        "search",
        aliases=["retrieve"],
        parents=[common],
        help="hybrid search: cited passages, entities, relations and facts",
        description="Full-text, vector and graph search fused into one result; every item is numbered [n].",
    )
    if commands is None or {"search", "retrieve"} & set(commands):
        _query_options(search)
    search.add_argument("--max-tokens", type=int, default=1500, help="token budget of the printed context")
    search.add_argument("--embedder", default=None, help=EMBEDDER_HELP)

    reembed = sub.add_parser(
        "reembed",
        parents=[common],
        help="drop every passage vector and embed again",
        description="Drop every stored vector and embed all passages, sentences and entity names with --embedder; "
        "the knowledge base then records that embedder. Use it to switch models.",
    )
    reembed.add_argument("--embedder", required=True, help=EMBEDDER_HELP)

    status = sub.add_parser(
        "status",
        parents=[common],
        help="counts of documents, passages, entities, relations",
        description="What the knowledge base holds: counts, entity labels, relation types, themes, the embedder "
        "and passages still waiting for vectors, and documents whose last ingest failed.",
    )
    status.add_argument("--documents", action="store_true", help="also list document keys")

    finalize = sub.add_parser(
        "finalize",
        parents=[common],
        help="embed passages without a vector and recompute themes (after ingests)",
        description="Finish a batch of ingests: embed what was stored without a vector (with the knowledge "
        "base's embedder, or --embedder) and recompute the themes (communities of entities).",
    )
    finalize.add_argument("--embedder", default=None, help=EMBEDDER_HELP)

    delete = sub.add_parser(
        "delete",
        aliases=["delete_document"],
        parents=[common],
        help="remove a document and what only it mentioned",
        description="Remove a document, its passages and the entities only it mentioned. KEY is the key ingest "
        "printed (list them with `evigraph status --documents`) or the file's path. Exit 1 if there is none.",
    )
    delete.add_argument("key", metavar="KEY", help="document key as printed by ingest, or the file's path")
    check = sub.add_parser(
        "check",
        parents=[common],
        help="look for damage a crash left (ghost edges, orphans, missing indexes); exit 1 if any remains",
    )
    check.add_argument("--repair", action="store_true", help="fix what can be fixed, then check again")
    doctor = sub.add_parser(
        "doctor",
        help="what this installation can do: extractors, embedders, MCP, LLM, engines, and how to add the rest",
    )
    doctor.add_argument("--json", action="store_true", help="print machine-readable JSON")
    mcp = sub.add_parser(
        "mcp",
        help="serve the agent toolkit over MCP (stdio, streamable HTTP or SSE)",
        description="Serve the toolkit over MCP: the read tools, and the write tools only with --allow-writes or "
        "--files-root (without either the database is opened read-only). Environment: EVIGRAPH_DB, "
        "EVIGRAPH_MCP_ALLOW_WRITES, EVIGRAPH_MCP_READ_ONLY, EVIGRAPH_MCP_FILES_ROOT, EVIGRAPH_MCP_TOKEN (required "
        "off loopback), EVIGRAPH_MCP_SCOPE, EVIGRAPH_EMBEDDER; flags win over them.",
    )
    mcp.add_argument("--db", default=None, help="knowledge base file (default: $EVIGRAPH_DB or ./evigraph.db)")
    mcp.add_argument("--engine", default="auto", choices=["auto", "kuzu", "ladybug"], help=argparse.SUPPRESS)
    mcp.add_argument(
        "--read-only",
        action="store_true",
        default=None,
        help="serve the read tools only (the default, said explicitly)",
    )
    mcp.add_argument("--allow-writes", action="store_true", default=None, help="serve the write tools too")
    mcp.add_argument(
        "--files-root", default=None, help="serve the write tools, and let ingest and preview_files read this folder"
    )
    mcp.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"])
    mcp.add_argument("--host", default="127.0.0.1", help="address for http/sse (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="port for http/sse (default 8765)")
    return parser


def _query_options(parser: argparse.ArgumentParser) -> None:
    """`search`'s options, generated from `RetrieveQuery`, so they match `retrieve` and the tool."""
    from annotated_types import Ge, Le

    from evigraph.retrieval.query import PATHS, RANKINGS, RetrieveQuery

    fields = RetrieveQuery.model_fields
    parser.add_argument("question", help=fields["question"].description)
    parser.add_argument(
        "--paths",
        type=lambda text: [p.strip() for p in text.split(",") if p.strip()],
        default=None,
        help=f"comma-separated search paths: {','.join(PATHS)} (default: all)",
    )
    for name in ("top_k", "expand_hops"):
        field = fields[name]
        low = next(m.ge for m in field.metadata if isinstance(m, Ge))
        high = next(m.le for m in field.metadata if isinstance(m, Le))
        flags = [f"--{name.replace('_', '-')}", *LEGACY_FLAGS.get(name, ())]
        help_text = f"{field.description} ({low}-{high}, default {field.default})"
        parser.add_argument(*flags, dest=name, type=int, default=field.default, help=help_text)
    ranking = fields["ranking"]
    parser.add_argument(
        "--ranking",
        choices=RANKINGS,
        default=ranking.default,
        help=f"{ranking.description} (default {ranking.default})",
    )


LEGACY_FLAGS = {"expand_hops": ("--hops",)}
"""Old spellings kept working for one release; `--expand-hops` is the name everywhere else."""

ALIASES = {"retrieve": "search", "delete_document": "delete"}
"""Verbs named as the toolkit's tools, so the tool name works on the command line too."""


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(commands=[a for a in given if not a.startswith("-")][:1])
    args = parser.parse_args(given)
    args.command = ALIASES.get(args.command, args.command)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from evigraph.errors import EvigraphError

    try:
        return asyncio.run(_dispatch(args))
    except EvigraphError as exc:
        _error(str(exc), args)
        return EXIT_FAILED
    except KeyboardInterrupt:  # an ingest stops on Ctrl-C without this (`IngestConsole.interrupts`)
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


async def _dispatch(args: argparse.Namespace) -> int:
    from evigraph.kb import KnowledgeBase

    if args.command == "ingest":
        from evigraph.cli_ingest import IngestConsole

        shown = not (args.quiet or args.json)
        console = IngestConsole(bar=shown and sys.stderr.isatty(), print_outcome=_print_outcome if shown else None)
        with console.interrupts():  # until the database is closed, so no Ctrl-C lands inside the engine
            kb = KnowledgeBase(
                args.db,
                engine=args.engine,
                chunker=args.chunker,
                extractor=args.extractor,
                max_file_bytes=max(1, int(args.max_file_mb * 1024 * 1024)),
                embedder=_embedder(args),
            )
            async with kb:
                return await _ingest(kb, args, console)
    if args.command == "status":
        from evigraph.cli_serving import holder_note, open_for_reads

        async with open_for_reads(args.db, engine=args.engine) as reads:  # or the process holding the file
            _note(holder_note(reads))
            return await _status(reads, args)
    if args.command == "delete":
        async with KnowledgeBase(args.db, engine=args.engine) as kb:
            return await _delete(kb, args)
    if args.command == "check":
        async with KnowledgeBase(args.db, engine=args.engine, read_only=not args.repair) as kb:
            return await _check(kb, args)
    if args.command == "search":
        from evigraph.cli_serving import holder_note, open_for_reads

        async with open_for_reads(args.db, engine=args.engine, embedder=_embedder(args)) as reads:
            _note(holder_note(reads))  # a running `evigraph mcp` answers with its model loaded
            return await _search(reads, args)
    if args.command == "doctor":
        return _doctor(args)
    if args.command == "mcp":
        from evigraph.errors import ConfigurationError
        from evigraph.mcp.main import McpConfig, configure_logging, serve

        configure_logging()
        try:
            config = McpConfig.from_env(
                db=args.db,
                read_only=args.read_only,
                allow_writes=args.allow_writes,
                files_root=args.files_root,
                transport=args.transport,
                host=args.host,
                port=args.port,
                engine=args.engine,
            )
            await serve(config)
        except ConfigurationError as exc:  # flags that contradict each other or the database's holder
            _error(str(exc), args)
            return EXIT_USAGE
        return EXIT_OK
    if args.command == "finalize":
        async with KnowledgeBase(args.db, engine=args.engine, embedder=_embedder(args)) as kb:
            report = await kb.finalize()
            if args.json:
                _print_json(report.model_dump())
            else:
                print(f"embedded {report.embedded} passages; {report.themes} themes")
            return EXIT_OK
    if args.command == "reembed":
        async with KnowledgeBase(args.db, engine=args.engine, embedder=_embedder(args)) as kb:
            count = await kb.reembed()
            _print_json({"embedded": count}) if args.json else print(f"embedded {count} passages")
            return EXIT_OK
    raise AssertionError(args.command)


async def _ingest(kb: KnowledgeBase, args: argparse.Namespace, console: IngestConsole) -> int:
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
            )
        finally:
            console.close()
    stopped = console.cancellation.cancelled
    if args.json:
        payload: dict[str, Any] = {
            "documents": [d.model_dump(mode="json", include={"key", "status", "error"}) for d in report.documents],
            "skipped": report.skipped,
            "excluded": report.excluded,
        }
        if stopped:
            payload["interrupted"] = True
        _print_json(payload)
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
    return EXIT_OK if report.ok else EXIT_FAILED


def _print_outcome(d: DocumentOutcome) -> None:
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


async def _status(kb: Reads, args: argparse.Namespace) -> int:
    status = await kb.status()
    docs = await kb.documents(limit=10_000) if args.documents else None
    if args.json:
        payload: dict[str, Any] = status.model_dump()
        if docs is not None:
            payload["document_list"] = [d.model_dump() for d in docs]
        _print_json(payload)
        return EXIT_OK
    print(f"knowledge base  {display_name(status.db)}")
    for name in ("documents", "passages", "entities", "relations", "mentions", "themes"):
        print(f"{name:<15} {getattr(status, name)}")
    if status.labels:
        print("entity labels   " + ", ".join(f"{k} {v}" for k, v in status.labels.items()))
    if status.relation_types:
        print("relation types  " + ", ".join(f"{k} {v}" for k, v in status.relation_types.items()))
    if status.embedding_model:
        pending = f", {status.pending_embeddings} passages pending" if status.pending_embeddings else ""
        print(f"embeddings      {status.embedding_model} ({status.embedding_dimension} dimensions{pending})")
    for d in docs or []:
        print(f"  {display_name(d.key)}  v{d.version}  {d.chunks} passages  {display_text(d.title)}")
    return EXIT_OK


async def _delete(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    from evigraph.ingest.sources import file_key

    key = args.key
    if not key.startswith("file:") and os.path.isfile(key):
        from pathlib import Path

        key = file_key(Path(key))
    deleted = await kb.delete_document(key, missing_ok=True)
    if args.json:
        _print_json({"key": key, "deleted": deleted})
    elif deleted:
        print(f"deleted {display_name(key)}")
    else:
        print(
            f"error: no document with key {key!r} (list keys with `evigraph status --documents`)",
            file=sys.stderr,
        )
    return EXIT_OK if deleted else EXIT_FAILED


async def _check(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    report = await kb.check(repair=args.repair)
    if args.json:
        _print_json(report.model_dump() | {"ok": report.ok})
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


def _doctor(args: argparse.Namespace) -> int:
    from evigraph.doctor import doctor

    report = doctor()
    if args.json:
        _print_json(report.model_dump())
        return EXIT_OK
    print(f"evigraph {_version()} on Python {report.python}")
    for c in report.checks:
        print(f"{'ok' if c.ok else '--':<3} {c.area:<10} {c.name:<40} {display_text(c.detail)}")
        if c.hint:
            print(f"{'':<15}{'':<40} fix: {display_text(c.hint)}")
    return EXIT_OK


def _embedder(args: argparse.Namespace) -> str | None:
    """The spec asked for (`--embedder`, else $EVIGRAPH_EMBEDDER); None lets the knowledge base
    use the embedder it was embedded with, `none` turns vectors off."""
    return args.embedder or os.environ.get("EVIGRAPH_EMBEDDER") or None


async def _search(kb: Reads, args: argparse.Namespace) -> int:
    from evigraph.retrieval.query import HINT, RetrieveQuery
    from evigraph.strict import build

    values = {
        "question": args.question,
        "paths": args.paths,
        "top_k": args.top_k,
        "expand_hops": args.expand_hops,
        "ranking": args.ranking,
    }
    flags = {name: f"--{name.replace('_', '-')}" for name in values if name != "question"}
    hint = HINT
    for name, flag in flags.items():
        hint = hint.replace(f"{name}:", f"{flag}:")
    query = build(
        RetrieveQuery, values, hint=f"{hint} (see `evigraph search --help`)", names=flags, what="search options"
    )
    result = await kb.retrieve(query)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.to_context(args.max_tokens))
    return EXIT_OK


def _print_json(payload: Any) -> None:
    print(json.dumps(payload, ensure_ascii=False, indent=2))


def _note(line: str | None) -> None:
    if line:
        print(line, file=sys.stderr)


def _error(message: str, args: argparse.Namespace) -> None:
    if getattr(args, "json", False):
        _print_json({"error": message})
    print(f"error: {display_text(message)}", file=sys.stderr)


def _version() -> str:
    from evigraph import __version__

    return __version__


if __name__ == "__main__":
    raise SystemExit(main())
