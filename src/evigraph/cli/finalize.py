"""`evigraph finalize`: embed, resolve entities across the graph, recompute themes, and say what it did.

Its own module, so its report lines (candidate pairs, merges, LLM spend) live beside the
verb they describe.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evigraph.cli.options import Verbs, embedder_option, llm_option
from evigraph.display import display_text
from evigraph.ingest.graph_resolution import GRAPH_RESOLVERS

if TYPE_CHECKING:
    from evigraph.kb import FinalizeReport

SHOWN_MERGES = 10


def add_parsers(verbs: Verbs) -> None:
    parser = verbs.add("finalize", run=finalize)
    embedder_option(parser)
    llm_option(parser)
    resolvers = "; ".join(f"{name}: {text}" for name, text in GRAPH_RESOLVERS.descriptions().items())
    parser.add_argument(
        "--resolver",
        default="exact",
        choices=GRAPH_RESOLVERS.names(),
        help=f"merge duplicate entities across the graph: {resolvers}",
    )


async def finalize(args: argparse.Namespace) -> int:
    """embed passages without a vector and recompute themes (after ingests)

    Finish a batch of ingests: embed what was stored without a vector (with the knowledge base's embedder, or
    --embedder) and recompute the themes (communities of entities)."""
    from evigraph.cli.common import EXIT_OK, embedder_arg, llm_arg, print_json
    from evigraph.kb import KnowledgeBase

    kb = KnowledgeBase(args.db, engine=args.engine, embedder=embedder_arg(args), llm=llm_arg(args))
    async with kb:
        report = await kb.finalize(resolver=args.resolver)
    if args.json:
        print_json(report.model_dump())
    else:
        print("\n".join(report_lines(report)))
    return EXIT_OK


def report_lines(report: FinalizeReport) -> list[str]:
    lines = [f"embedded {report.embedded} passages; {report.themes} themes"]
    r = report.resolution
    if r is None or r.resolver == "exact":
        return lines
    every = r.entities * (r.entities - 1) // 2
    lines.append(
        f"resolved with {r.resolver}: {r.entities:,} entities, {r.candidates:,} candidate pairs "
        f"({r.compared:,} compared of {every:,} possible), {r.confirmed:,} confirmed, {r.rejected:,} rejected"
        + (f", {r.unjudged:,} undecided" if r.unjudged else "")
        + f"; {r.merged:,} entities merged"
    )
    for m in r.merges[:SHOWN_MERGES]:
        lines.append(f"  {display_text(m.name)} <- {display_text(', '.join(m.names))}")
    if r.merged > SHOWN_MERGES:
        lines.append(f"  …and {r.merged - min(SHOWN_MERGES, len(r.merges)):,} more (--json lists up to 100)")
    if r.llm is not None:
        lines.append(
            f"LLM: {r.llm.calls:,} calls, {r.llm.input_tokens:,} input + {r.llm.output_tokens:,} output tokens"
        )
    lines += [f"LLM call failed: {display_text(e)}" for e in r.errors]
    return lines
