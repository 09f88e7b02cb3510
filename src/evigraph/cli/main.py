"""`evigraph`'s entry: parse, dispatch to the verb, turn an `EvigraphError` into one line and
an exit code; and the verbs too small for a module of their own (ingest's printing, status,
delete, check, doctor, search, reembed)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evigraph.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    embedder_arg,
    llm_arg,
    note,
    print_json,
    query_input,
    report_error,
)
from evigraph.cli.parser import ALIASES, build_parser, version
from evigraph.display import display_name, display_text

if TYPE_CHECKING:
    from evigraph.cli.ingest import IngestConsole
    from evigraph.cli.serving import Reads
    from evigraph.kb import KnowledgeBase
    from evigraph.models import DocumentOutcome, IngestReport, LLMSpend


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(commands=[a for a in given if not a.startswith("-")][:1])
        args = parser.parse_args(given)
        args.command = ALIASES.get(args.command, args.command)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        from evigraph.errors import EvigraphError

        try:
            code = asyncio.run(_dispatch(args))
        except EvigraphError as exc:
            report_error(str(exc), args)
            code = EXIT_FAILED
        except KeyboardInterrupt:  # an ingest stops on Ctrl-C without this (`IngestConsole.interrupts`)
            print("interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
        sys.stdout.flush()  # a reader gone shows here, not as an error the interpreter prints at exit
        if argv is None:  # the program itself, about to exit (not a caller going on in this process)
            _skip_final_collection()
        return code
    except BrokenPipeError:
        # `evigraph status --documents | head -1`: the reader has what it wanted. Stop quietly as
        # tools killed by SIGPIPE do; stdout goes to /dev/null so the flush at exit has nowhere to fail.
        _drop_stdout()
        return EXIT_BROKEN_PIPE


def _skip_final_collection() -> None:
    """The interpreter's last garbage collection walks every object still alive (the embedder's
    model, the retrieval indexes, every module) only to free memory the exit frees anyway: 2.7 s
    after a cold `evigraph search` with MiniLM had answered, 0.26 s without an embedder (hotpotqa
    dev corpus). Objects frozen here are not walked: 0.7 s and 0.06 s. The knowledge base is
    closed and stdout flushed by now; atexit handlers still run."""
    import gc

    gc.freeze()


def _drop_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file (replaced in-process): nothing to flush at exit
        pass


async def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "server":  # before the knowledge base import: it opens no database
        from evigraph.cli.server import server

        return server(args)
    if args.command == "list":
        from evigraph.cli.server import list_knowledge_bases

        return await list_knowledge_bases(args)
    from evigraph.kb import KnowledgeBase

    if args.command == "ingest":
        from evigraph.cli.ingest import IngestConsole

        shown = not (args.quiet or args.json)
        console = IngestConsole(bar=shown and sys.stderr.isatty(), print_outcome=_print_outcome if shown else None)
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
                return await _ingest(kb, args, console)
    if args.command == "ingest-code":
        from evigraph.cli.code import ingest_code

        return await ingest_code(args)
    if args.command == "status":
        from evigraph.cli.serving import holder_note, open_for_reads

        async with open_for_reads(args.db, engine=args.engine) as reads:  # or the process holding the file
            note(holder_note(reads))
            return await _status(reads, args)
    if args.command == "delete":
        async with KnowledgeBase(args.db, engine=args.engine) as kb:
            return await _delete(kb, args)
    if args.command == "check":
        async with KnowledgeBase(args.db, engine=args.engine, read_only=not args.repair) as kb:
            return await _check(kb, args)
    if args.command == "compact":
        from evigraph.cli.compact import compact

        return await compact(args)
    if args.command in ("tasks", "task"):
        from evigraph.cli import tasks as cli_tasks

        return await (cli_tasks.tasks if args.command == "tasks" else cli_tasks.task)(args)
    if args.command in ("decisions", "decision"):
        from evigraph.cli import decisions as cli_decisions

        return await (cli_decisions.decisions if args.command == "decisions" else cli_decisions.decision)(args)
    if args.command == "search":
        from evigraph.cli.serving import holder_note, open_for_reads

        async with open_for_reads(args.db, engine=args.engine, embedder=embedder_arg(args)) as reads:
            note(holder_note(reads))  # a running `evigraph mcp` answers with its model loaded
            return await _search(reads, args)
    if args.command == "cypher":
        from evigraph.cli.cypher import cypher

        return await cypher(args)
    if args.command == "ask":
        from evigraph.cli.ask import ask

        return await ask(args)
    if args.command == "doctor":
        return _doctor(args)
    if args.command in ("mcp", "serve"):
        from evigraph.cli import toolkit as cli_toolkit

        return await (cli_toolkit.mcp if args.command == "mcp" else cli_toolkit.serve)(args)
    if args.command == "finalize":
        from evigraph.cli.finalize import finalize

        return await finalize(args)
    if args.command == "reembed":
        async with KnowledgeBase(args.db, engine=args.engine, embedder=embedder_arg(args)) as kb:
            count = await kb.reembed()
            print_json({"embedded": count}) if args.json else print(f"embedded {count} passages")
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
    if report.llm is not None:
        print(f"llm: {_spend_line(report.llm)}", file=sys.stderr)
    if report.left:
        print(
            f"stopped at the LLM token ceiling ({report.llm.max_tokens if report.llm else 0:,}): {len(report.left)} "
            "documents not ingested; run again (with a higher --max-llm-tokens) to ingest them",
            file=sys.stderr,
        )


def _spend_line(spend: LLMSpend) -> str:
    """LLM cost in one line: calls, tokens, and per passage, the figure extractors compare by."""
    line = f"{spend.calls} calls, {spend.input_tokens:,} input + {spend.output_tokens:,} output tokens"
    if sent := spend.sent_passages:
        line += f" for {sent} passages ({spend.input_tokens / sent:.0f} + {spend.output_tokens / sent:.0f} per passage)"
    if spend.cached_passages:
        line += f"; {spend.cached_passages} passages from the cache"
    if spend.contexts or spend.cached_contexts:
        line += f"; contexts for {spend.contexts} passages ({spend.cached_contexts} more from the cache)"
    dropped = [
        (spend.unaligned_entities, "entities not in their passage"),
        (spend.dangling_relations, "relations whose end was not found"),
    ]
    dropped_text = ", ".join(f"{n} {what}" for n, what in dropped if n)
    return line + (f"; dropped {dropped_text}" if dropped_text else "")


async def _status(kb: Reads, args: argparse.Namespace) -> int:
    status = await kb.status()
    docs = await kb.documents(limit=10_000) if args.documents else None
    if args.json:
        payload: dict[str, Any] = status.model_dump()
        if docs is not None:
            payload["document_list"] = [d.model_dump() for d in docs]
        print_json(payload)
        return EXIT_OK
    print(f"knowledge base  {display_name(status.db)}")
    for name in ("documents", "passages", "entities", "relations", "mentions", "themes"):
        print(f"{name:<15} {getattr(status, name)}")
    listing = "" if args.documents or not status.failed_documents else " (list them with --documents)"
    print(f"{'failed':<15} {status.failed_documents}{listing}")
    if status.labels:
        print("entity labels   " + ", ".join(f"{k} {v}" for k, v in status.labels.items()))
    if status.relation_types:
        print("relation types  " + ", ".join(f"{k} {v}" for k, v in status.relation_types.items()))
    if status.embedding_model:
        pending = f", {status.pending_embeddings} passages pending" if status.pending_embeddings else ""
        print(f"embeddings      {status.embedding_model} ({status.embedding_dimension} dimensions{pending})")
    if status.llm is not None:
        print(f"llm             {_spend_line(status.llm)}")
    for d in docs or []:
        print(f"  {display_name(d.key)}  v{d.version}  {d.chunks} passages  {display_text(d.title)}")
    if args.documents:
        for f in status.failed_sources:
            print(f"  {display_name(f.key)}  failed  {display_text(f.error or 'no reason recorded')}")
        if status.failed_documents > len(status.failed_sources):
            print(f"  ... and {status.failed_documents - len(status.failed_sources)} more failed")
    return EXIT_OK


async def _delete(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    from evigraph.ingest.sources import file_key

    key = args.key
    if not key.startswith("file:") and os.path.isfile(key):
        from pathlib import Path

        key = file_key(Path(key))
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


async def _check(kb: KnowledgeBase, args: argparse.Namespace) -> int:
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


def _doctor(args: argparse.Namespace) -> int:
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


async def _search(kb: Reads, args: argparse.Namespace) -> int:
    from evigraph.retrieval.query import HINT, RetrieveQuery

    query = query_input(args, RetrieveQuery, HINT)
    result = await kb.retrieve(query)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.to_context(args.max_tokens))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
