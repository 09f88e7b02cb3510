"""Every verb is declared once, by its family's module, with the function that runs it (`run`), so
the command line dispatches by what the parser holds, and `cli/parser.py`'s table of families is
the only list of them: no second list of verbs, aliases or flags to keep in step."""

from __future__ import annotations

import argparse
import ast
import inspect
from pathlib import Path

import pytest

import evigraph.cli
from evigraph.cli.options import ENGINES, Verbs
from evigraph.cli.parser import FAMILIES, build_parser

CLI = Path(evigraph.cli.__file__).parent


def _verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _declared_by(family: object) -> dict[str, str]:
    """The names (verbs and aliases) one family declares, each -> its verb."""
    parser = argparse.ArgumentParser()
    verbs = Verbs(parser.add_subparsers(dest="command"), commands=None)
    family.add_parsers(verbs)  # type: ignore[attr-defined]
    return verbs.verb_of


def test_every_verb_and_alias_runs_a_function_of_the_family_that_declares_it() -> None:
    verbs = _verbs(build_parser())
    assert {"ingest", "retrieve", "search", "answer", "ask", "cypher", "cypher_query", "server", "doctor"} <= set(verbs)
    for family in FAMILIES:
        for name in _declared_by(family):
            run = verbs[name].get_default("run")
            assert callable(run), f"{name} names no run function"
            assert inspect.getmodule(run) is family, f"{name} runs {run.__module__}.{run.__qualname__}"


def test_the_family_table_lists_every_family_once_and_no_verb_twice() -> None:
    """A family module left out of the table would declare verbs no one can call; two families
    declaring one name would leave one of them unreachable."""
    with_parsers = {
        f"evigraph.cli.{path.stem}"
        for path in CLI.glob("*.py")
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "add_parsers"
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    }
    listed = [family.__name__ for family in FAMILIES]  # type: ignore[attr-defined]
    assert len(listed) == len(set(listed)) and set(listed) == with_parsers
    seen: dict[str, str] = {}
    for family in FAMILIES:
        names = _declared_by(family)
        assert names, f"{family} declares no verb"
        for name in names:
            assert name not in seen, f"{name} is declared by {seen[name]} and {family}"
            seen[name] = str(family)
    assert set(seen) == set(_verbs(build_parser()))


def test_help_lists_the_verbs_in_the_order_of_the_family_table() -> None:
    order = [verb for family in FAMILIES for verb in dict.fromkeys(_declared_by(family).values())]
    assert list(dict.fromkeys(p.prog.split()[-1] for p in _verbs(build_parser()).values())) == order


def _search(args: argparse.Namespace) -> int:
    """search the knowledge
    base

    Every path,
    fused."""
    return 0


def test_a_verb_is_helped_by_its_function_docstring_and_declared_once() -> None:
    parser = argparse.ArgumentParser(prog="evigraph")
    verbs = Verbs(parser.add_subparsers(dest="command"), commands=None)
    search = verbs.add("search", run=_search, aliases=["retrieve"])
    assert "search the knowledge base" in parser.format_help()
    assert search.description == "Every path, fused."
    assert verbs.add("check", run=lambda args: 0).description is None
    with pytest.raises(argparse.ArgumentError, match="conflicting"):
        verbs.add("find", run=_search, aliases=["retrieve"])


@pytest.mark.parametrize(
    ("alias", "verb"),
    [
        ("search", "retrieve"),
        ("ask", "answer"),
        ("cypher_query", "cypher"),
        ("ingest-code", "ingest_code"),
        ("delete", "delete_document"),
    ],
)
def test_an_alias_is_parsed_as_its_verb(alias: str, verb: str) -> None:
    verbs = _verbs(build_parser())
    assert verbs[alias].get_default("run") is verbs[verb].get_default("run")
    assert verbs[alias] is verbs[verb]
    args = {"search": ["q"], "ask": ["q"], "cypher_query": ["RETURN 1"], "ingest-code": ["."], "delete": ["k"]}[alias]
    assert build_parser([alias]).parse_args([alias, *args]).command == verb


def test_options_from_input_models_are_built_for_the_verb_asked_by_any_of_its_names() -> None:
    for typed, verb in (
        ("search", "retrieve"),
        ("retrieve", "retrieve"),
        ("ask", "answer"),
        ("cypher_query", "cypher"),
    ):
        options = _verbs(build_parser([typed]))[verb]
        assert any(a.dest == "question" or a.dest == "query" for a in options._actions), typed
    unasked = _verbs(build_parser(["status"]))["retrieve"]
    assert not any(a.dest == "question" for a in unasked._actions)


def test_the_constants_the_parser_cannot_import_match_their_owners() -> None:
    """The engines, transports, ports and open-database bound are the store's and the servers',
    whose modules load a backend or the serving stack: too much for `evigraph --help`."""
    from evigraph.api import catalog, config
    from evigraph.cli import toolkit
    from evigraph.mcp import main
    from evigraph.store.embedded.engine import ENGINES as STORE_ENGINES

    assert ("auto", *STORE_ENGINES) == ENGINES
    assert toolkit.TRANSPORTS == main.TRANSPORTS and toolkit.MCP_PORT == main.DEFAULT_PORT
    assert toolkit.SERVE_PORT == config.DEFAULT_PORT and toolkit.MAX_OPEN == catalog.MAX_OPEN
