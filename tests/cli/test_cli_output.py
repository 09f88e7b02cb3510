"""What `evigraph search` and `status` print: paths, evidence ids, failed files, themes; and a reader
that goes away (`| head`) ends the command quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import run_cli, write_corpus

from evigraph import KnowledgeBase, Toolkit
from evigraph.cli.common import EXIT_BROKEN_PIPE
from evigraph.tools.graph_tools import StatusResult

QUESTION = "Who leads ReefWatch?"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared corpus and one file that cannot be ingested, finalized so themes exist."""
    folder = write_corpus(tmp_path_factory.mktemp("docs"))
    (folder / "photo.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    path = tmp_path_factory.mktemp("kb") / "kb.db"
    ingest = run_cli("ingest", str(folder), "--db", str(path), "-q", "--extractor", "rules")
    assert ingest.code == 1, ingest.err  # one file failed, the others are in
    finalize = run_cli("finalize", "--db", str(path))
    assert finalize.code == 0, finalize.err
    return path


def test_search_text_names_each_passages_file(db: Path) -> None:
    text = run_cli("search", QUESTION, "--db", str(db), "--top-k", "3")
    assert text.code == 0, text.err
    passages = text.out.split("## Entities")[0].splitlines()[1:]
    assert passages and all(line.startswith("[") for line in passages)
    reef = next(line for line in passages if "Ana Costa leads ReefWatch" in line)
    assert reef.startswith("[") and "(ReefWatch > Team; " in reef and "reefwatch.md) " in reef
    path = reef.split("; ", 1)[1].split(") ", 1)[0]
    assert Path(path).name == "reefwatch.md" and Path(path).is_file()


def test_search_json_gives_every_item_its_evidence_id(db: Path) -> None:
    typed = run_cli("search", QUESTION, "--db", str(db), "--json", "--expand-hops", "2")
    assert typed.code == 0, typed.err
    result = typed.json()
    kinds = {"passages": "passage", "entities": "entity", "relations": "relation", "facts": "relation"}
    items = [(kind, item) for section, kind in kinds.items() for item in result[section]]
    assert result["passages"] and result["entities"]
    for kind, item in items:
        assert item["evidence_id"] == f"{kind}:{item['id']}", item
    ids = [item["evidence_id"] for _, item in items]
    assert len(ids) == len(set(ids))  # a relation found as a link and as a fact comes once


def test_status_shows_themes_and_failed_documents_with_their_reasons(db: Path) -> None:
    typed = run_cli("status", "--db", str(db), "--json")
    assert typed.code == 0, typed.err
    status = typed.json()
    assert status["themes"] > 0 and status["documents"] == 3 and status["failed_documents"] == 1
    [failed] = status["failed_sources"]
    assert failed["key"].endswith("photo.txt") and "binary file" in failed["error"]

    text = run_cli("status", "--db", str(db))
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert f"themes          {status['themes']}" in lines
    assert "failed          1 (list them with --documents)" in lines

    listed = run_cli("status", "--db", str(db), "--documents")
    assert listed.code == 0, listed.err
    assert "failed          1" in listed.out.splitlines()
    [line] = [line for line in listed.out.splitlines() if "photo.txt" in line]
    assert line.startswith("  file:") and "  failed  " in line and "binary file" in line


async def test_the_status_tool_reports_failed_documents(db: Path) -> None:
    async with KnowledgeBase(db, read_only=True) as kb:
        status = await kb.status()
        result = await Toolkit(kb, read_only=True).call("status", {})
    assert status.failed_documents == 1 and status.failed_sources[0].key.endswith("photo.txt")
    assert isinstance(result, StatusResult) and result.failed_documents == 1 and result.themes == status.themes
    text = result.to_llm_text()
    assert "Documents whose last ingest failed: 1." in text
    assert "## Failed at their last ingest\n- file:" in text and "photo.txt: " in text and "binary file" in text


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("status", "--documents"), EXIT_BROKEN_PIPE),
        (("search", QUESTION, "--json"), EXIT_BROKEN_PIPE),
        (("search", QUESTION), EXIT_BROKEN_PIPE),
        (("--help",), 0),  # argparse's own exit, after it has dropped what it could not write
    ],
    ids=["status", "search-json", "search-text", "help"],
)
def test_a_closed_pipe_ends_the_command_quietly(db: Path, args: tuple[str, ...], code: int) -> None:
    """`evigraph ... | head -1`: the reader is gone before the output is written (its read end is
    closed before the command starts, so every write fails, as the worst case of `head`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        db_args = ["--db", str(db)] if args[0] != "--help" else []
        proc = subprocess.run(
            [sys.executable, "-m", "evigraph", *args, *db_args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=180,
            env={k: v for k, v in os.environ.items() if k != "EVIGRAPH_DB"},
        )
    finally:
        os.close(write_end)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr == ""  # no traceback, no "Exception ignored" at interpreter exit


def test_head_reads_the_first_lines_and_nothing_is_printed_on_stderr(db: Path) -> None:
    """The real pipeline, where `head` exits after its lines while evigraph may still be writing."""
    command = f'"{sys.executable}" -m evigraph status --documents --db "{db}" | head -1'
    proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0
    assert proc.stdout.startswith("knowledge base") and proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr


def test_ingest_says_it_saves_the_retrieval_indexes(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "docs")
    path = tmp_path / "kb.db"
    shown = run_cli("ingest", str(folder), "--db", str(path), "--extractor", "rules")
    assert shown.code == 0, shown.err
    assert any(line.startswith("saved retrieval indexes in ") for line in shown.err.splitlines()), shown.err
    assert {"graph.json", "passages_bm25.json"} <= {p.name for p in (tmp_path / "kb.db.indexes").iterdir()}
    (folder / "more.md").write_text("Zephyrine Quillborough opened a depot in Vardø.\n")
    quiet = run_cli("ingest", str(folder), "--db", str(path), "--extractor", "rules", "-q")
    assert quiet.code == 0, quiet.err
    assert "retrieval indexes" not in quiet.err


async def test_save_indexes_tells_each_index_then_the_end(tmp_path: Path) -> None:
    told: list[tuple[str, int, int]] = []
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
        await kb.ingest([write_corpus(tmp_path / "docs")])
        await kb.save_indexes(lambda name, done, total: told.append((name, done, total)))
    names = [name for name, done, total in told if done < total]
    assert {"passages_bm25", "entities_bm25", "code_bm25", "names", "graph", "terms", "titles"} == set(names)
    assert names[0] == "graph"  # the largest build first, on the engine's emptiest page pool
    assert [done for _, done, _ in told] == list(range(len(told)))
    assert told[-1] == ("", len(names), len(names))
