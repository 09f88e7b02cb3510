"""Every verb names the function that runs it where its options are declared (`run`), so the
command line dispatches by what the parser holds, not by a second list of verbs."""

from __future__ import annotations

import argparse
import importlib

from evigraph.cli.parser import build_parser


def _verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_verb_and_alias_runs_a_function_of_its_family_module() -> None:
    verbs = _verbs(build_parser())
    assert {"ingest", "retrieve", "search", "answer", "ask", "cypher", "cypher_query", "server", "doctor"} <= set(verbs)
    for name, sub in verbs.items():
        run = sub.get_default("run")
        assert run, f"{name} names no run function"
        module, function = run.split(":")
        assert module.startswith("evigraph.cli."), run
        assert callable(getattr(importlib.import_module(module), function)), run


def test_an_alias_runs_what_its_verb_runs() -> None:
    verbs = _verbs(build_parser())
    for alias, verb in {
        "retrieve": "search",
        "answer": "ask",
        "cypher_query": "cypher",
        "ingest_code": "ingest-code",
    }.items():
        assert verbs[alias].get_default("run") == verbs[verb].get_default("run")
