"""`evigraph ingest --extractor llm` in a real process against a model whose replies are unusable:
one line per document at the default level, the tracebacks under `--verbose`, and the failed calls
counted in the report with what they cost."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CliResult, run_cli, write_corpus
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Request, chat_reply


def not_json(_: Request) -> object:
    return chat_reply("Sure! Here are the entities: Harbor Lab, Lisbon.", prompt_tokens=300, completion_tokens=11)


def ingest(tmp_path: Path, server: ReplayServer, *flags: str) -> CliResult:
    docs = write_corpus(tmp_path / "docs")
    env = {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_MODEL": "test-model", "EVIGRAPH_LLM_API_KEY": KEY}
    db = tmp_path / "kb.db"
    return run_cli("ingest", str(docs), "--db", str(db), "--extractor", "llm", "--embedder", "none", *flags, env=env)


def test_a_model_that_never_answers_json_fails_each_document_in_one_line(tmp_path: Path) -> None:
    with ReplayServer(answer=not_json) as server:
        result = ingest(tmp_path, server)
        calls = server.calls()
    assert result.code == 1, result.out + result.err
    assert "Traceback" not in result.err and "Traceback" not in result.out
    documents = sorted(p.name for p in (tmp_path / "docs").iterdir())
    lines = (result.out + result.err).splitlines()
    failed = [line for line in lines if line.startswith("failed ")]
    assert len(failed) == len(documents)
    assert all("extraction failed: test-model returned malformed JSON" in line for line in failed), failed
    assert any(line.startswith("batched extraction failed (") for line in lines), result.err
    # Every call the server answered is in the report, as a failed call with the tokens it reported.
    spend = next(line for line in lines if line.startswith("llm: "))
    assert spend.startswith(f"llm: {calls} calls ({calls} failed), {300 * calls:,} input + {11 * calls} output tokens")
    assert KEY not in result.out + result.err


def test_verbose_shows_the_tracebacks(tmp_path: Path) -> None:
    with ReplayServer(answer=not_json) as server:
        result = ingest(tmp_path, server, "--verbose")
    assert result.code == 1
    assert "Traceback (most recent call last)" in result.err
    assert "DEBUG evigraph" in result.err
    assert KEY not in result.out + result.err
