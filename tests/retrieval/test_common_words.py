"""A question's function words never seed a name: "How do I ...?" on a corpus about DoS attacks.

The full-text stemmer folds "DoS" to "do", so before names were searched without stopwords every
"How do I ...?" question seeded the DoS entity and its passages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.retrieval.analysis import name_terms
from evigraph.retrieval.recipe import RECIPES

DOCS = {
    "security.md": "# Security\n\nStarlette limits request bodies to resist DoS attacks. A DoS attack floods "
    "the server with requests until it stops answering.\n",
    "install.md": "# Installation\n\nInstall Starlette with pip, then serve the application with Uvicorn.\n",
    "routing.md": "# Routing\n\nStarlette routes each request with Route and Mount objects to an endpoint.\n",
}

HOW_QUESTIONS = (
    "How do I do it?",
    "How do I install Starlette?",
    "How do I use Mount?",
    "How do you do routing?",
    "What do I need to do to serve it?",
)


@pytest.fixture
async def db(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
        await kb.ingest(docs)
    return tmp_path / "kb.db"


def test_a_question_s_function_words_are_not_name_terms() -> None:
    assert name_terms("How do I do it?") == ""
    assert name_terms("How do I use Mount?") == "mount"
    assert name_terms("What is DoS?") == "dos"


@pytest.mark.parametrize("recipe", sorted(RECIPES))
async def test_how_do_i_questions_never_seed_dos(db: Path, recipe: str) -> None:
    async with KnowledgeBase(db, embedder="none", retrieval=recipe) as kb:
        if recipe != "passages":  # the one recipe without name paths
            assert "DoS" in {e.name for e in (await kb.retrieve("What is a DoS attack?")).entities}
        for question in HOW_QUESTIONS:
            result = await kb.retrieve(question)
            assert "DoS" not in {e.name for e in result.entities}, question
        nameless = await kb.retrieve("How do I do it?")
        assert nameless.passages  # found by its words, so the check below has passages to check
        assert all(set(p.paths) <= {"passages"} for p in nameless.passages)  # words alone, never a name
