"""`evigraph tasks` and `evigraph task NAME`: what agents recorded in a project, for a person to read.

Agents write tasks, events and steps through the task tools; these verbs let the person behind
them see that work without an MCP client. They only read, so the knowledge base is opened
read-only, and they print the same resume view get_task gives an agent.
"""

from __future__ import annotations

import argparse

from evigraph.tools.trace_tools import task_view

READER = "evigraph-cli"
"""The agent name the verbs read as; reads record nothing, so it shows nowhere."""


async def tasks(args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import KnowledgeBase

    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        page = await kb.traces(args.project, READER).list_tasks(after_name=args.after, limit=args.limit)
    if args.json:
        print_json(page.model_dump(mode="json"))
        return EXIT_OK
    if not page.tasks:
        print(f"project {args.project!r} has no tasks" + (f" after {args.after!r}" if args.after else ""))
    for t in page.tasks:
        print(f"{t.name}  ({t.events} event(s), created {t.created_at:%Y-%m-%d %H:%M} by {t.agent}): {t.goal}")
    if page.next_after_name is not None:
        print(f"... more: evigraph tasks --project {args.project} --after {page.next_after_name!r}")
    return EXIT_OK


async def task(args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import KnowledgeBase

    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        view = await task_view(kb.traces(args.project, READER), args.name, events=args.events, steps=args.steps)
    if args.json:
        print_json(view.model_dump(mode="json", exclude={"tool", "hint"}))
    else:
        print(view.to_llm_text(max_chars=1_000_000))
    return EXIT_OK
