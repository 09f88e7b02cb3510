"""`evigraph ask`: a cited answer from the knowledge base's LLM, its sources, and the check's verdict.

The exit code is 1 when the citations fail the check, so a script cannot take an unchecked
answer for a checked one; "not in the knowledge base" is an honest answer and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from evigraph.cli.options import Verbs, embedder_option, llm_option, query_options, retrieval_options
from evigraph.display import display_name, display_text

if TYPE_CHECKING:
    from evigraph.evidence.items import Item
    from evigraph.kb.answers import Answer


def add_parsers(verbs: Verbs) -> None:
    parser = verbs.add("answer", run=answer, aliases=["ask"])
    if verbs.wanted("answer"):  # `AnswerInput`'s fields: `search`'s and the two budgets, matching `answer`
        from evigraph.kb.answers import AnswerInput

        numbers = ["top_k", "expand_hops", "max_context_tokens", "max_answer_tokens"]
        query_options(parser, AnswerInput, numbers)
    parser.add_argument("--stream", action="store_true", help="print the answer as it is written (not with --json)")
    llm_option(parser)
    embedder_option(parser)
    retrieval_options(parser, verbs.wanted("answer"))


async def answer(args: argparse.Namespace) -> int:
    """a cited answer from the LLM, with its sources and the citation check (exit 1 if it fails)

    Retrieve as `search` does, let the LLM answer from the numbered evidence only, and check its [n] citations
    against what it was shown. Prints the answer, the cited sources and the check's verdict; exit 1 when the
    citations fail the check (an answer saying the knowledge base lacks it exits 0). Needs an OpenAI-compatible
    endpoint: EVIGRAPH_LLM_BASE_URL, EVIGRAPH_LLM_MODEL, EVIGRAPH_LLM_API_KEY."""
    from evigraph.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, embedder_arg, llm_arg, query_input, report_error
    from evigraph.kb import KnowledgeBase
    from evigraph.kb.answers import ANSWER_HINT, AnswerInput

    if args.stream and args.json:
        report_error("--stream prints the answer as it is written, --json one document at its end: choose one", args)
        return EXIT_USAGE
    query = query_input(args, AnswerInput, ANSWER_HINT)
    kb = KnowledgeBase(
        args.db,
        engine=args.engine,
        read_only=True,
        embedder=embedder_arg(args),
        llm=llm_arg(args),
        retrieval=args.recipe,
        reranker=args.reranker,
    )
    async with kb:
        if args.stream:
            async with kb.answer_stream(query) as stream:
                async for delta in stream:
                    sys.stdout.write(_safe(delta))
                    sys.stdout.flush()
            answer = stream.result
            print()
        else:
            answer = await kb.answer(query)
    if args.json:
        print(answer.model_dump_json(indent=2))
    else:
        if not args.stream:
            print(_safe(answer.text))
        _print_sources(answer)
    return EXIT_FAILED if answer.status == "unverified" else EXIT_OK


def _print_sources(answer: Answer) -> None:
    cited = answer.cited()
    print()
    print("Sources:" if cited else "Sources: none cited")
    for item in cited:
        print(f"  {source_line(item)}")
    print(f"Citations: {display_text(answer.verdict)}")


def source_line(item: Item) -> str:
    """One cited item as a person looks it up: a passage by title, path and place; anything else
    by its line and the path of a passage that states it."""
    from evigraph.evidence.items import PassageItem
    from evigraph.evidence.render import citation_line, line_of

    if isinstance(item, PassageItem):
        return f"[{item.n}] {citation_line(item.source)}"
    location = getattr(item, "location", None)
    path = f" ({display_name(location.path)})" if location is not None and location.path else ""
    return line_of(item) + path


def _safe(text: str) -> str:
    """Model output on a terminal: line breaks kept, every other control character escaped, since
    a passage can talk a model into writing escape sequences."""
    return "\n".join(display_text(line) for line in text.split("\n"))
