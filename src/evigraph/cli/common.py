"""What every verb shares: exit codes, the specs a verb's flags name, its pydantic input built
from the parsed options, and how results and errors are printed.

The verbs sit above this module and nothing here imports a verb, so the command line has no
import cycle; like the parser it imports only the standard library up front.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from evigraph.display import display_text

if TYPE_CHECKING:
    from evigraph.models import LLMSpend
    from evigraph.strict import StrictInput

Q = TypeVar("Q", bound="StrictInput")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as shells report a command whose reader went away


def embedder_arg(args: argparse.Namespace) -> str | None:
    """The spec asked for (`--embedder`, else $EVIGRAPH_EMBEDDER); None lets the knowledge base
    use the embedder it was embedded with, `none` turns vectors off."""
    return args.embedder or os.environ.get("EVIGRAPH_EMBEDDER") or None


def llm_arg(args: argparse.Namespace) -> str | None:
    """The spec asked for (`--llm`, else `openai:$EVIGRAPH_LLM_MODEL`); None lets the knowledge
    base use the LLM it recorded, `none` uses no LLM."""
    from evigraph.providers.llms import llm_spec_from_env

    return args.llm or llm_spec_from_env()


def query_input(args: argparse.Namespace, model: type[Q], hint: str) -> Q:
    """`model` from the parsed options named as its fields, refused with the flags as the user typed them."""
    from evigraph.strict import build

    values = {name: getattr(args, name) for name in model.model_fields}
    flags = {name: f"--{name.replace('_', '-')}" for name in values if name != "question"}
    for name, flag in flags.items():
        hint = hint.replace(f"{name}:", f"{flag}:")
    verb = args.command
    return build(model, values, hint=f"{hint} (see `evigraph {verb} --help`)", names=flags, what=f"{verb} options")


def print_json(payload: Any) -> None:
    print(json.dumps(payload, ensure_ascii=False, indent=2))


def note(line: str | None) -> None:
    if line:
        print(line, file=sys.stderr)


def report_error(message: str, args: argparse.Namespace) -> None:
    from evigraph.masking import env_secrets, mask_credentials, url_secrets

    # Errors are masked where they are made; this catches a credential one quotes from elsewhere.
    db = getattr(args, "db", None)
    message = mask_credentials(message, (*env_secrets(), *url_secrets(str(db) if db is not None else None)))
    if getattr(args, "json", False):
        print_json({"error": message})
    print(f"error: {display_text(message)}", file=sys.stderr)


def field_bounds(field: Any) -> tuple[Any, Any]:
    """The (ge, le) bounds a pydantic field declares, which a flag's help states."""
    from annotated_types import Ge, GroupedMetadata, Le

    # A bound written by a group (`limits.Bounded`, an Interval) is inside it.
    flat = [m for g in field.metadata for m in (g if isinstance(g, GroupedMetadata) else (g,))]
    low = next(m.ge for m in flat if isinstance(m, Ge))
    high = next(m.le for m in flat if isinstance(m, Le))
    return low, high


def spend_line(spend: LLMSpend) -> str:
    """LLM cost in one line: calls, tokens, and per passage, the figure extractors compare by."""
    failed = f" ({spend.failed_calls} failed)" if spend.failed_calls else ""
    line = f"{spend.calls} calls{failed}, {spend.input_tokens:,} input + {spend.output_tokens:,} output tokens"
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


def flag_values(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The parsed options `names`, for a call whose parameters the flags are named after."""
    return {name: getattr(args, name) for name in names}


def version() -> str:
    from evigraph.version import __version__

    return __version__
