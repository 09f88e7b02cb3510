"""`evigraph decisions` and `evigraph decision ID`: the decisions agents recorded, for a person to read.

Agents record decisions through the decision tools; these verbs show them without an MCP client.
They only read, so the knowledge base is opened read-only, and they print the same results the
tools give an agent (`DecisionListResult`, `DecisionResult`, `SupportHistoryResult`).

`decisions` lists one task's decisions with their history (`--task`), the decisions that need
review (`--review`, optionally of one task), or else every task's standing decisions, grouped by task.
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from evigraph.cli.tasks import READER
from evigraph.tools.decision_tools import DecisionListResult, DecisionResult, SupportHistoryResult

if TYPE_CHECKING:
    from evigraph.kb.decisions import DecisionPage
    from evigraph.kb.traces import Traces
    from evigraph.trace_records import SupportRecord

TEXT_CHARS = 1_000_000
FLAGS = {"task_name": "--task", "after_id": "--after", "limit": "--limit", "decision_id": "ID"}
HINT = "--limit is 1 to 100; --after and ID take a decision id as `evigraph decisions` prints it"


async def decisions(args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import KnowledgeBase

    options = _options(args)
    one_list = args.review or args.task is not None
    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        traces = kb.traces(args.project, READER)
        if args.task is not None:
            await traces.get_task(args.task)  # an unknown task is said plainly, not listed as empty
        if args.review:
            listed = [(args.task, "decision(s) need review", await traces.list_decisions_for_review(**options))]
        elif args.task is not None:
            page = await traces.list_decisions(args.task, include_history=True, after_id=args.after, limit=args.limit)
            listed = [(args.task, f"decision(s) of task {args.task!r}", page)]
        else:
            standing = await _standing(traces, args.limit)
            listed = [(name, f"standing decision(s) of task {name!r}", page) for name, page in standing]
    if args.json:
        if one_list:
            print_json(listed[0][2].model_dump(mode="json"))
        else:
            print_json({"tasks": [{"task": name, **page.model_dump(mode="json")} for name, _, page in listed]})
        return EXIT_OK
    if not any(page.decisions for _, _, page in listed):
        print(_none(args))
        return EXIT_OK
    for i, (name, title, page) in enumerate(listed):
        result = DecisionListResult(decisions=page.decisions, next_after_id=page.next_after_id, title=title)
        print(("\n" if i else "") + result.to_llm_text(TEXT_CHARS))
        if page.next_after_id is not None:
            scope = _scope(args) if one_list else f"--project {shlex.quote(args.project)} --task {shlex.quote(name)}"
            print(f"... more: evigraph decisions {scope} --after {page.next_after_id}")
    return EXIT_OK


async def decision(args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.errors import DecisionNotFoundError
    from evigraph.kb import KnowledgeBase
    from evigraph.kb.decisions import GetDecision
    from evigraph.strict import build

    build(GetDecision, {"decision_id": args.id}, HINT, names=FLAGS, what="decision id")
    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        traces = kb.traces(args.project, READER)
        try:
            found = await traces.get_decision(args.id)
        except DecisionNotFoundError as exc:
            hint = f"`evigraph decisions --project {shlex.quote(args.project)}` lists this project's decisions"
            raise DecisionNotFoundError(exc.message, hint=hint) from None
        history = await _history(traces, found.id)
    if args.json:
        payload: dict[str, Any] = {"decision": found.model_dump(mode="json")}
        payload["support_history"] = [s.model_dump(mode="json") for s in history]
        print_json(payload)
        return EXIT_OK
    print(DecisionResult(decision=found).to_llm_text(TEXT_CHARS))
    print()
    shown = SupportHistoryResult(decision_id=found.id, supports=history, next_after_ordinal=None)
    print("History: " + shown.to_llm_text(TEXT_CHARS))
    return EXIT_OK


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The listing's options, checked by the Traces input model and refused with the flags as typed."""
    from evigraph.errors import ConfigurationError
    from evigraph.kb.decisions import ListDecisions, ListDecisionsForReview
    from evigraph.strict import build

    values: dict[str, Any] = {"task_name": args.task, "after_id": args.after, "limit": args.limit}
    if args.review:
        return build(ListDecisionsForReview, values, HINT, names=FLAGS, what="decisions options").model_dump()
    if args.task is None:
        if args.after is not None:
            raise ConfigurationError(
                "--after continues one list: a task's decisions or those needing review",
                hint="add --task NAME or --review",
            )
        values["task_name"] = "any"  # every task is listed; only --limit is checked here
    return build(ListDecisions, values, HINT, names=FLAGS, what="decisions options").model_dump()


async def _standing(traces: Traces, limit: int) -> list[tuple[str, DecisionPage]]:
    """The standing decisions (active or needing review) of each task that has some, paging through the tasks."""
    out: list[tuple[str, DecisionPage]] = []
    after: str | None = None
    while True:
        tasks = await traces.list_tasks(after_name=after, limit=200)
        for t in tasks.tasks:
            page = await traces.list_decisions(t.name, include_history=False, limit=limit)
            if page.decisions:
                out.append((t.name, page))
        if tasks.next_after_name is None:
            return out
        after = tasks.next_after_name


async def _history(traces: Traces, decision_id: str) -> list[SupportRecord]:
    """Every support the decision was given, the replaced ones too, paging through all of them."""
    out: list[SupportRecord] = []
    after = -1
    while True:
        page = await traces.list_support_history(decision_id, after_ordinal=after, limit=100)
        out.extend(page.supports)
        if page.next_after_ordinal is None:
            return out
        after = page.next_after_ordinal


def _scope(args: argparse.Namespace) -> str:
    scope = f"--project {shlex.quote(args.project)}"
    scope += f" --task {shlex.quote(args.task)}" if args.task is not None else ""
    return scope + (" --review" if args.review else "")


def _none(args: argparse.Namespace) -> str:
    after = f" after {args.after}" if args.after else ""
    if args.review:
        where = f"task {args.task!r} of project {args.project!r}" if args.task else f"project {args.project!r}"
        return f"{where} has no decisions that need review{after}"
    if args.task is not None:
        return f"task {args.task!r} of project {args.project!r} has no decisions{after}"
    return f"project {args.project!r} has no standing decisions (a task's history: --task NAME)"
