"""What the verb families' parsers share: how a verb is declared (`Verbs`), the options every
knowledge-base verb takes, and the flags more than one family declares (the embedder and LLM
specs, a whole number bounded by an input model, the query options of `search` and `ask`).

Each family module declares its own verbs with these (`add_parsers(verbs)`), and `cli/parser.py`
lists the families. Like them this module imports only argparse and the strategy registries up
front, so `evigraph --help` answers at once; what is generated from pydantic input models is
built only for the verb asked (`Verbs.wanted`).
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from evigraph.cli.common import field_bounds
from evigraph.providers.embedders import EMBEDDERS
from evigraph.providers.llms import LLMS

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from evigraph.retrieval.query import RetrieveInput

Run = Callable[[argparse.Namespace], int | Awaitable[int]]
"""A verb's function: the parsed options in, the exit code out (awaited when it is a coroutine)."""

EMBEDDER_HELP = f"{EMBEDDERS.choices} (default: $EVIGRAPH_EMBEDDER, else none)"
LLM_HELP = f"{LLMS.choices} (default: openai:$EVIGRAPH_LLM_MODEL, else the one the knowledge base recorded)"
ENGINES = ("auto", "kuzu", "ladybug")
"""The embedded engines `--engine` chooses from (the store's `ENGINES` and "auto", which the
command line cannot import without loading a backend: `tests/cli/test_cli_dispatch.py` holds them equal)."""


class Verbs:
    """The `evigraph` verbs as the families declare them: each verb once, with its function, its
    aliases and, for the verbs that open a knowledge base, the options they all take.

    `main` passes the verb it was given as `commands`, so options generated from input models
    (which need pydantic) are built for that verb only; `evigraph --help` lists verbs, not options.
    """

    def __init__(
        self, sub: argparse._SubParsersAction[argparse.ArgumentParser], commands: Collection[str] | None
    ) -> None:
        self._sub = sub
        self._commands = None if commands is None else set(commands)
        self.verb_of: dict[str, str] = {}
        """Every name a verb answers to (its own and its aliases) -> the verb."""
        self.common = _common_options()
        self.logging = verbose_option(argparse.ArgumentParser(add_help=False))

    def add(
        self, name: str, run: Run, *, aliases: Sequence[str] = (), opens_kb: bool = True
    ) -> argparse.ArgumentParser:
        """Declare `name` (and `aliases`, the toolkit's name for the same tool) to run `run`.

        The verb's help is its function's docstring, one text for the reader of the code and of
        `--help`: the first paragraph is the line `evigraph --help` lists, the rest the verb's own
        `--help` description. The parsed options name the verb by its own name (`command`)
        whichever alias was typed, and the function to run (`run`), so `main` needs no second list
        of verbs or aliases. `opens_kb`: takes `--db`, `--json` and `--engine` (the servers and
        `doctor` declare their own).
        """
        summary, _, details = inspect.cleandoc(run.__doc__ or "").partition("\n\n")
        parser = self._sub.add_parser(
            name,
            aliases=list(aliases),
            parents=[self.common, self.logging] if opens_kb else [self.logging],
            help=" ".join(summary.split()),
            description=" ".join(details.split()) or None,
        )
        parser.set_defaults(run=run, command=name)
        for spelling in (name, *aliases):
            self.verb_of[spelling] = name
        return parser

    def wanted(self, name: str) -> bool:
        """Whether to build the options of verb `name` that are generated from input models: when
        every verb is built, or when `name` (by any of its names) is the one asked for."""
        return self._commands is None or any(self.verb_of.get(c) == name for c in self._commands)


def _common_options() -> argparse.ArgumentParser:
    """`--db`, `--json` and `--engine`, which every verb that opens a knowledge base takes."""
    common = where_options(
        "--db",
        "knowledge base: a file, or falkordb://[user:pass@]host:port/GRAPH (default: $EVIGRAPH_DB, else ./evigraph.db)",
    )
    common.add_argument(
        "--engine",
        default="auto",
        choices=ENGINES,
        help="embedded engine (default: the file's own; ladybug for a new file)",
    )
    return common


def verbose_option(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`--verbose`: evigraph's log at debug level, tracebacks of the failures a run carries on
    past included; without it a failure is one line."""
    parser.add_argument(
        "--verbose", "-v", action="store_true", default=argparse.SUPPRESS, help="log details and tracebacks"
    )
    return parser


def where_options(flag: str, help: str) -> argparse.ArgumentParser:
    """A parent parser: where a verb works (`flag`: a knowledge base's `--db`, a server's `--dir`), and `--json`."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(flag, default=None, help=help)
    json_option(options)
    return options


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def embedder_option(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    parser.add_argument("--embedder", default=None, required=required, help=EMBEDDER_HELP)


def retrieval_options(parser: argparse.ArgumentParser, described: bool) -> None:
    """`--recipe` and `--reranker` of the verbs that retrieve; `described`: list the names in the
    help, which imports the retrieval modules (only for the verb asked)."""
    recipes = rerankers = "see `evigraph retrieve --help`"
    if described:
        from evigraph.retrieval.recipe import RECIPES
        from evigraph.retrieval.rerankers import RERANKERS

        recipes, rerankers = ", ".join(RECIPES), RERANKERS.choices
    parser.add_argument("--recipe", default=None, help=f"retrieval recipe: {recipes} (default: default)")
    parser.add_argument("--reranker", default=None, help=f"reorder the candidates: {rerankers} (default: none)")


def llm_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llm", default=None, help=LLM_HELP)


def bounded_int(
    parser: argparse.ArgumentParser, field: FieldInfo, *flags: str, dest: str | None = None, what: str | None = None
) -> None:
    """A whole number with the default and bounds the input model's `field` declares, so the help
    cannot drift from what the model accepts; `what` (else the field's description) says what it counts."""
    low, high = field_bounds(field)
    parser.add_argument(
        *flags,
        dest=dest,
        type=int,
        default=field.default,
        help=f"{what or field.description} ({low}-{high}, default {field.default})",
    )


def query_options(
    parser: argparse.ArgumentParser,
    model: type[RetrieveInput],
    numbers: Sequence[str],
    legacy: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """The question and the search options of `model` (`search`: `RetrieveInput`; `ask`: `AnswerInput`,
    which extends it), generated from its fields, so they match the Python method and the tool;
    `legacy`: old spellings of a flag still taken."""
    from evigraph.retrieval.query import PATHS, RANKINGS

    fields = model.model_fields
    parser.add_argument("question", help=fields["question"].description)
    parser.add_argument(
        "--paths",
        type=lambda text: [p.strip() for p in text.split(",") if p.strip()],
        default=None,
        help=f"comma-separated search paths: {','.join(PATHS)} (default: all)",
    )
    for name in numbers:
        flags = (f"--{name.replace('_', '-')}", *(legacy or {}).get(name, ()))
        bounded_int(parser, fields[name], *flags, dest=name)
    ranking = fields["ranking"]
    help_text = f"{ranking.description} (default {ranking.default})"
    parser.add_argument("--ranking", choices=RANKINGS, default=ranking.default, help=help_text)
