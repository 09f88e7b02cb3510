"""`evigraph retrieve --recipe/--reranker`: a recipe by name on the command line, bad names refused with the choices."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli

QUESTION = "Who leads ReefWatch?"


@pytest.fixture
def db(corpus: Path, tmp_path: Path) -> Path:
    path = tmp_path / "kb.db"
    assert run_cli("ingest", str(corpus), "--db", str(path), "-q", "--extractor", "rules").code == 0
    return path


def test_a_recipe_chosen_on_the_command_line_runs(db: Path) -> None:
    full = run_cli("retrieve", QUESTION, "--db", str(db), "--json").json()
    only = run_cli("search", QUESTION, "--db", str(db), "--json", "--recipe", "passages").json()
    assert set(full["paths"]) > {"passages"} and only["paths"] == ["passages"]
    assert only["entities"] == [] and only["passages"]
    asked = run_cli("retrieve", QUESTION, "--db", str(db), "--json", "--recipe", "passages", "--paths", "exact_names")
    assert asked.json()["paths"] == ["exact_names"]  # the query's own paths win over the recipe's


@pytest.mark.parametrize(
    ("flags", "names"),
    [(("--recipe", "nearest"), ("default", "fusion", "passages", "local")), (("--reranker", "bm25"), ("cosine",))],
    ids=["recipe", "reranker"],
)
def test_an_unknown_name_is_refused_with_the_choices(db: Path, flags: tuple[str, str], names: tuple[str, ...]) -> None:
    result = run_cli("retrieve", QUESTION, "--db", str(db), *flags)
    assert result.code == 1 and result.out == ""
    assert all(name in result.err for name in names), result.err
    assert "Traceback" not in result.err


def test_the_cosine_reranker_without_an_embedder_names_the_fix(db: Path) -> None:
    result = run_cli("retrieve", QUESTION, "--db", str(db), "--reranker", "cosine")
    assert result.code == 1 and "embedder" in result.err and "Traceback" not in result.err
