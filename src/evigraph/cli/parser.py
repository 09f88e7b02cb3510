"""The `evigraph` command's arguments: the verb families, in the order `evigraph --help` lists them.

Each family module declares its own verbs, their flags and aliases (`add_parsers(verbs)`, with the
shared pieces in `cli/options.py`), beside the functions that run them; this table is the one
place that names the families. The family modules import only argparse and the strategy
registries up front, so building the parser for `evigraph --help` loads no model and no engine.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from typing import Protocol

from evigraph.cli import (
    ask,
    code,
    compact,
    cypher,
    decisions,
    finalize,
    ingest,
    maintenance,
    reads,
    server,
    tasks,
    toolkit,
)
from evigraph.cli.common import version
from evigraph.cli.options import Verbs, verbose_option


class Family(Protocol):
    """A verb family module: it declares its verbs with `Verbs.add`."""

    def add_parsers(self, verbs: Verbs) -> None: ...


FAMILIES: tuple[Family, ...] = (
    ingest,
    code,
    finalize,
    reads,
    cypher,
    ask,
    maintenance,
    compact,
    tasks,
    decisions,
    toolkit,
    server,
)
"""Every verb family, in the order its verbs are listed: writing, reading, keeping the knowledge
base, the agents' traces, serving."""


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `commands`, only those verbs get the options that need heavier imports.

    `evigraph --help` lists verbs, not their options, so it need not load the models the
    options are generated from; `main` passes the verb it was given.
    """
    parser = argparse.ArgumentParser(
        prog="evigraph",
        description="Local-first GraphRAG knowledge base: ingest documents into a graph, query it with citations.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    verbose_option(parser)
    verbs = Verbs(parser.add_subparsers(dest="command", metavar="COMMAND"), commands)
    for family in FAMILIES:
        family.add_parsers(verbs)
    return parser
