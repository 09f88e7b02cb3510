"""A cold `evigraph search` loads what its question needs, and skips the exit's last collection.

Each probe is a fresh interpreter running the real command on a real knowledge base, which
reports what it imported and whether it froze its objects before exit (`cli._skip_final_collection`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli, write_corpus

NOT_FOR_A_SEARCH = (
    "torch",
    "spacy",
    "sentence_transformers",
    "mcp",
    "starlette",
    "uvicorn",
    "httpx",
    "evigraph.tools.toolkit",  # the toolkit, and every tool's input model behind it
    "evigraph.serving.backend",
    "evigraph.ingest.pipeline",  # the ingest machinery came with the knowledge base class
    "evigraph.ingest.loaders.pdf",
    "evigraph.ingest.communities",
)
"""What a search without an embedder used to import (the toolkit came with the check for a
process holding the database, the ingest pipeline and file readers with `KnowledgeBase`) or must
never import: the MCP SDK, the web stack, the models."""

PROBE = """
import gc, json, sys
from evigraph.cli import main
sys.argv = ["evigraph", *{argv!r}]
code = main({how})
loaded = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"code": code, "frozen": gc.get_freeze_count(), "loaded": loaded}}))
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cold")
    db = folder / "kb.db"
    done = run_cli("ingest", str(write_corpus(folder / "docs")), "--db", str(db), "-q", "--extractor", "rules")
    assert done.code == 0, done.err
    return db


@pytest.fixture(scope="module")
def embedded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Passages with vectors and entities from spaCy: graph ranking runs, and the question's names
    once came from spaCy too."""
    folder = tmp_path_factory.mktemp("cold-minilm")
    db = folder / "kb.db"
    argv = ["ingest", str(write_corpus(folder / "docs")), "--db", str(db), "-q", "--extractor", "spacy"]
    done = run_cli(*argv, "--embedder", "minilm")
    assert done.code == 0, done.err
    return db


def probe(db: Path, *, as_program: bool, heavy: tuple[str, ...] = NOT_FOR_A_SEARCH) -> dict[str, Any]:
    argv = ["search", "Who leads ReefWatch?", "--db", str(db), "--top-k", "2"]
    code = PROBE.format(argv=argv, how="" if as_program else "sys.argv[1:]", heavy=heavy)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=db.parent)
    assert "Ana Costa leads ReefWatch" in done.stdout, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    return result


def test_a_search_without_an_embedder_loads_no_toolkit_models_or_servers(db: Path) -> None:
    assert probe(db, as_program=True, heavy=(*NOT_FOR_A_SEARCH, "evigraph.ingest.extraction.rules"))["loaded"] == []


def test_graph_ranking_ranks_without_spacy_or_scipy(embedded_db: Path) -> None:
    """The names come from the knowledge base's own entity names (`retrieval/question_names.py`):
    the question's extractor is never loaded, though spaCy built the graph; and one question's
    walk repays no scipy import."""
    shapes = "evigraph.ingest.extraction.rules"  # names by shape: imported once a plan looks for names
    heavy = (*NOT_FOR_A_SEARCH, shapes, "scipy")  # one question's walk multiplies in numpy (`ranking_snapshot.Walk`)
    assert probe(embedded_db, as_program=True, heavy=heavy)["loaded"] == [shapes]


def test_the_program_freezes_its_objects_before_exit_and_a_caller_keeps_them(db: Path) -> None:
    assert probe(db, as_program=True)["frozen"] > 0
    assert probe(db, as_program=False)["frozen"] == 0  # main(argv) in a process that goes on
