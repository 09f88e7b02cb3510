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

from evigraph.cli.common import field_bounds, flag_values
from evigraph.cli.options import Verbs, bounded_int
from evigraph.cli.tasks import READER

if TYPE_CHECKING:
    from evigraph.kb.decisions import DecisionPage
    from evigraph.kb.traces import Traces
    from evigraph.strict import StrictInput
    from evigraph.trace_records import SupportRecord

TEXT_CHARS = 1_000_000
FLAGS = {"task_name": "--task", "after_id": "--after", "limit": "--limit", "decision_id": "ID"}
"""The decision input models' fields as the verbs spell them: the parser declares these flags (each
parsed under its field's name), and a refusal names what the user typed."""


def add_parsers(verbs: Verbs) -> None:
    listing = verbs.add("decisions", run=decisions)
    listing.add_argument("--project", required=True, help="the project the agents worked in")
    _field_option(listing, "task_name", "NAME", "only this task's decisions, with history")
    listing.add_argument("--review", action="store_true", help="only the decisions that need review")
    _field_option(listing, "after_id", "ID", "continue after this decision (with --task or --review)")
    if verbs.wanted("decisions"):
        from evigraph.kb.decisions import ListDecisionsInput

        limit = ListDecisionsInput.model_fields["limit"]
        bounded_int(listing, limit, FLAGS["limit"], dest="limit", what="the most decisions listed per task")
    one = verbs.add("decision", run=decision)
    one.add_argument(
        "decision_id", metavar=FLAGS["decision_id"], help="the decision's id, as `evigraph decisions` prints it"
    )
    one.add_argument("--project", required=True, help="the project the decision belongs to")


def _field_option(parser: argparse.ArgumentParser, field: str, metavar: str, help: str) -> None:
    """The option `FLAGS` spells `field` as, parsed under the field's own name, so the values go to
    the input model as they are (`flag_values`)."""
    parser.add_argument(FLAGS[field], dest=field, default=None, metavar=metavar, help=help)


def _hint(model: type[StrictInput]) -> str:
    """How to give `model`'s fields on the command line, its bounds read from the model itself."""
    hint = f"{FLAGS['after_id']} and {FLAGS['decision_id']} take a decision id as `evigraph decisions` prints it"
    if "limit" not in model.model_fields:
        return hint
    low, high = field_bounds(model.model_fields["limit"])
    return f"{FLAGS['limit']} is {low} to {high}; {hint}"


async def decisions(args: argparse.Namespace) -> int:
    """list the decisions agents recorded in a project

    List decisions: every task's standing ones (active or needing review) grouped by task; with --task one task's,
    superseded and rejected history included; with --review those a changed source flagged, each with its cause.
    Read-only."""
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import KnowledgeBase
    from evigraph.tools.decision_tools import DecisionListResult

    options = _options(args)
    one_list = args.review or args.task_name is not None
    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        traces = kb.traces(args.project, READER)
        if args.task_name is not None:
            await traces.get_task(args.task_name)  # an unknown task is said plainly, not listed as empty
        if args.review:
            listed = [(args.task_name, "decision(s) need review", await traces.list_decisions_for_review(**options))]
        elif args.task_name is not None:
            page = await traces.list_decisions(**options)  # ListDecisionsInput: with history
            listed = [(args.task_name, f"decision(s) of task {args.task_name!r}", page)]
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
    """show one decision: conclusion, rationale, supports, review causes and support history

    Show a decision as get_decision gives it to an agent, then every support it was given, the replaced ones too.
    Read-only."""
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.errors import DecisionNotFoundError
    from evigraph.kb import KnowledgeBase
    from evigraph.kb.decisions import GetDecisionInput
    from evigraph.strict import build
    from evigraph.tools.decision_tools import DecisionResult, SupportHistoryResult

    build(
        GetDecisionInput, flag_values(args, ["decision_id"]), _hint(GetDecisionInput), names=FLAGS, what="decision id"
    )
    async with KnowledgeBase(args.db, engine=args.engine, read_only=True) as kb:
        traces = kb.traces(args.project, READER)
        try:
            found = await traces.get_decision(args.decision_id)
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
    from evigraph.kb.decisions import ListDecisionsForReviewInput, ListDecisionsInput
    from evigraph.strict import build

    values = flag_values(args, ["task_name", "after_id", "limit"])
    model: type[StrictInput] = ListDecisionsForReviewInput if args.review else ListDecisionsInput
    if not args.review and args.task_name is None:
        if args.after_id is not None:
            raise ConfigurationError(
                "--after continues one list: a task's decisions or those needing review",
                hint="add --task NAME or --review",
            )
        values["task_name"] = "any"  # every task is listed; only --limit is checked here
    return build(model, values, _hint(model), names=FLAGS, what="decisions options").model_dump()


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
    scope += f" --task {shlex.quote(args.task_name)}" if args.task_name is not None else ""
    return scope + (" --review" if args.review else "")


def _none(args: argparse.Namespace) -> str:
    after = f" after {args.after_id}" if args.after_id else ""
    if args.review:
        project = f"project {args.project!r}"
        where = f"task {args.task_name!r} of {project}" if args.task_name else project
        return f"{where} has no decisions that need review{after}"
    if args.task_name is not None:
        return f"task {args.task_name!r} of project {args.project!r} has no decisions{after}"
    return f"project {args.project!r} has no standing decisions (a task's history: --task NAME)"
