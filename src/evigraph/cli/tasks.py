"""`evigraph tasks` and `evigraph task NAME`: what agents recorded in a project, for a person to read.

Agents write tasks, events and steps through the task tools; these verbs let the person behind
them see that work without an MCP client. They only read, so the knowledge base is opened
read-only, and they print the same resume view get_task gives an agent.
"""

from __future__ import annotations

import argparse

from evigraph.cli.options import Verbs, bounded_int

READER = "evigraph-cli"
"""The agent name the verbs read as; reads record nothing, so it shows nowhere."""


def add_parsers(verbs: Verbs) -> None:
    listing = verbs.add("tasks", run=tasks)
    listing.add_argument("--project", required=True, help="the project the agents worked in")
    if verbs.wanted("tasks"):
        from evigraph.kb.traces import ListTasksInput

        fields = ListTasksInput.model_fields
        listing.add_argument("--after", default=None, help=fields["after_name"].description)
        bounded_int(listing, fields["limit"], "--limit", what="the most tasks listed")
    one = verbs.add("task", run=task)
    one.add_argument("name", metavar="NAME", help="the task's name")
    one.add_argument("--project", required=True, help="the project the task belongs to")
    if verbs.wanted("task"):
        from evigraph.tools.trace_tools import TaskViewInput

        fields = TaskViewInput.model_fields
        bounded_int(one, fields["events"], "--events")
        bounded_int(one, fields["steps"], "--steps")


async def tasks(args: argparse.Namespace) -> int:
    """list the tasks agents recorded in a project

    List a project's tasks by name, with their goal, events and creator. Read-only."""
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
    """show one task: goal, steps by state, latest events

    Show a task as an agent resuming it sees it (get_task): its goal, its steps by state and its latest events
    without their bodies. Read-only."""
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import KnowledgeBase
    from evigraph.tools.trace_tools import task_view

    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        view = await task_view(kb.traces(args.project, READER), args.name, events=args.events, steps=args.steps)
    if args.json:
        print_json(view.model_dump(mode="json", exclude={"tool", "hint"}))
    else:
        print(view.to_llm_text(max_chars=1_000_000))
    return EXIT_OK
