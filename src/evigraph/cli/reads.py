"""`evigraph status` and `evigraph search`: reads, answered by the file or by the evigraph process
holding it (a running `evigraph mcp` or ingest), whose note says so."""

from __future__ import annotations

import argparse
from typing import Any

from evigraph.cli.common import EXIT_OK, embedder_arg, note, print_json, query_input, spend_line
from evigraph.cli.options import Verbs, embedder_option, query_options, retrieval_options
from evigraph.display import display_name, display_text

LEGACY_FLAGS = {"expand_hops": ("--hops",)}
"""Old spellings kept working for one release; `--expand-hops` is the name everywhere else."""


def add_parsers(verbs: Verbs) -> None:
    search_parser = verbs.add("retrieve", run=retrieve, aliases=["search"])
    if verbs.wanted("retrieve"):
        from evigraph.retrieval.query import RetrieveInput

        query_options(search_parser, RetrieveInput, ["top_k", "expand_hops"], legacy=LEGACY_FLAGS)
    search_parser.add_argument("--max-tokens", type=int, default=1500, help="token budget of the printed context")
    embedder_option(search_parser)
    retrieval_options(search_parser, verbs.wanted("retrieve"))
    status_parser = verbs.add("status", run=status)
    status_parser.add_argument(
        "--documents", action="store_true", help="also list document keys, and failed files with their errors"
    )


async def status(args: argparse.Namespace) -> int:
    """counts of documents, passages, entities, relations, code

    What the knowledge base holds: counts, entity labels, relation types, code (repositories, files, classes,
    functions), themes, the embedder and passages still waiting for vectors, and documents whose last ingest
    failed."""
    from evigraph.cli.serving import holder_note, open_for_reads

    async with open_for_reads(args.db, engine=args.engine) as reads:  # or the process holding the file
        note(holder_note(reads))
        return await _status(reads, args)


async def retrieve(args: argparse.Namespace) -> int:
    """hybrid search: cited passages, entities, relations and facts

    Full-text, vector and graph search fused into one result; every item is numbered [n]."""
    from evigraph.cli.serving import holder_note, open_for_reads
    from evigraph.retrieval.query import HINT, RetrieveInput

    query = query_input(args, RetrieveInput, HINT)
    chosen = {"retrieval": args.recipe, "reranker": args.reranker}
    async with open_for_reads(args.db, engine=args.engine, embedder=embedder_arg(args), **chosen) as reads:
        note(holder_note(reads))  # a running `evigraph mcp` answers with its model loaded
        result = await reads.retrieve(query)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.to_context(args.max_tokens))
    return EXIT_OK


async def _status(kb: Any, args: argparse.Namespace) -> int:
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
    if status.code_files:
        code = {"repositories": status.code_repos, "files": status.code_files, **status.code_symbols}
        print("code            " + ", ".join(f"{k} {v}" for k, v in code.items()))
    if status.embedding_model:
        pending = f", {status.pending_embeddings} passages pending" if status.pending_embeddings else ""
        print(f"embeddings      {status.embedding_model} ({status.embedding_dimension} dimensions{pending})")
    if status.llm is not None:
        print(f"llm             {spend_line(status.llm)}")
    for d in docs or []:
        print(f"  {display_name(d.key)}  v{d.version}  {d.chunks} passages  {display_text(d.title)}")
    if args.documents:
        for f in status.failed_sources:
            print(f"  {display_name(f.key)}  failed  {display_text(f.error or 'no reason recorded')}")
        if status.failed_documents > len(status.failed_sources):
            print(f"  ... and {status.failed_documents - len(status.failed_sources)} more failed")
    return EXIT_OK
