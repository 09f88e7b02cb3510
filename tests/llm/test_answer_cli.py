"""`evigraph ask` end to end: a real process, a real knowledge base, the replay server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import CliResult, run_cli, write_corpus
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply, stream_reply

QUESTION = "Who leads ReefWatch?"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("ask")
    path = base / "kb.db"
    ingested = run_cli("ingest", str(write_corpus(base / "docs")), "--db", str(path), "-q", "--extractor", "rules")
    assert ingested.code == 0, ingested.err
    return path


def llm_env(server: ReplayServer, **extra: str) -> dict[str, str]:
    return {
        "EVIGRAPH_LLM_BASE_URL": server.url,
        "EVIGRAPH_LLM_MODEL": "test-model",
        "EVIGRAPH_LLM_API_KEY": KEY,
        **extra,
    }


def ask(db: Path, server: ReplayServer, *args: str, **env: str) -> CliResult:
    result = run_cli("ask", QUESTION, "--db", str(db), "--top-k", "3", *args, env=llm_env(server, **env))
    assert KEY not in result.out and KEY not in result.err  # never shown, whatever happened
    return result


def test_ask_prints_the_answer_its_sources_and_the_verdict(db: Path, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("Ana Costa leads ReefWatch [1]."))
    result = ask(db, replay_server)
    assert result.code == 0, result.err
    answer, sources = result.out.split("\n\nSources:\n")
    assert answer == "Ana Costa leads ReefWatch [1]."
    lines = sources.splitlines()
    assert lines[0].startswith("  [1] ReefWatch, ") and lines[0].endswith(".md, chars 72-138")
    assert str(db.parent / "docs" / "reefwatch.md") in lines[0]  # the path, to open it
    assert lines[1].startswith("Citations: verified")
    assert replay_server.chat_requests()[0].header("authorization") == f"Bearer {KEY}"

    replay_server.queue(chat_reply("Ana Costa leads ReefWatch [1]."))
    typed = ask(db, replay_server, "--json")
    assert typed.code == 0, typed.err
    data = typed.json()
    assert data["verified"] is True and data["status"] == "verified" and data["citations"]["cited"] == [1]
    assert data["passages"][0]["n"] == 1 and data["passages"][0]["evidence_id"].startswith("passage:")
    usage = {"input_tokens": 12, "output_tokens": 7, "calls": 1, "failed_calls": 0, "estimated_calls": 0}
    assert data["usage"] == usage


def test_a_failing_check_shows_and_exits_1(db: Path, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("Ana Costa leads ReefWatch [42]."))
    result = ask(db, replay_server)
    assert result.code == 1
    assert "Sources: none cited\nCitations: NOT verified: [42] is not evidence the model was shown" in result.out

    replay_server.queue(chat_reply("Tomas Reyes leads ReefWatch [1]."))
    typed = run_cli("answer", QUESTION, "--db", str(db), "--json", env=llm_env(replay_server))  # the tool's name
    assert typed.code == 1
    data = typed.json()
    assert data["verified"] is False and data["status"] == "unverified"
    assert data["citations"]["unsupported"][0]["missing"] == ["Tomas Reyes"]
    assert "NOT verified" in data["verdict"]


def test_not_in_the_knowledge_base_exits_0(db: Path, replay_server: ReplayServer) -> None:
    replay_server.queue(chat_reply("Who funds ReefWatch is not in the knowledge base."))
    result = ask(db, replay_server)
    assert result.code == 0, result.err
    assert result.out.endswith(
        "Sources: none cited\nCitations: not in the knowledge base: the answer cites nothing "
        "and says the evidence lacks it\n"
    )


def test_stream_prints_deltas_as_they_come(db: Path, replay_server: ReplayServer) -> None:
    replay_server.queue(stream_reply(["Ana Costa ", "leads ", "ReefWatch [1]."], event_delay=1.0))
    args = ["ask", QUESTION, "--db", str(db), "--top-k", "3", "--stream"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "evigraph", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **llm_env(replay_server)},
    )
    assert proc.stdout is not None
    first = os.read(proc.stdout.fileno(), 10)  # returns as soon as the first delta is written
    running = proc.poll() is None
    rest, err = proc.communicate(timeout=120)
    assert first == b"Ana Costa " and running, "the first delta was printed only at the end"
    out = (first + rest).decode()
    assert out.startswith("Ana Costa leads ReefWatch [1].\n\nSources:\n  [1] ReefWatch, ")
    assert "Citations: verified" in out and proc.returncode == 0, err.decode()
    assert KEY.encode() not in err


def test_stream_and_json_are_refused_together(db: Path, replay_server: ReplayServer) -> None:
    result = ask(db, replay_server, "--stream", "--json")
    assert result.code == 2 and "choose one" in result.err and replay_server.calls() == 0


def _echo_key(request: Request) -> Reply:
    return error_reply(401, f"Incorrect API key provided: {request.header('authorization')}")


def test_llm_errors_are_one_line_naming_the_fix(db: Path, replay_server: ReplayServer) -> None:
    replay_server.answer = _echo_key
    refused = ask(db, replay_server, "--stream")
    assert refused.code == 1 and refused.err.count("\n") == 1, refused.err
    assert refused.err.startswith("error: ") and "refused the API key (HTTP 401)" in refused.err
    assert "check EVIGRAPH_LLM_API_KEY" in refused.err and "Bearer ***" in refused.err

    replay_server.answer = None
    replay_server.queue(Reply(delay=5, body={}))
    started = time.monotonic()
    slow = ask(db, replay_server, EVIGRAPH_LLM_TIMEOUT="0.5")
    assert slow.code == 1 and slow.err.count("\n") == 1, slow.err
    assert "did not answer within 0.5 s" in slow.err and "EVIGRAPH_LLM_TIMEOUT" in slow.err
    assert time.monotonic() - started < 60


def test_without_an_llm_the_error_names_the_settings(db: Path) -> None:
    result = run_cli("ask", QUESTION, "--db", str(db))
    assert result.code == 1 and result.err.count("\n") == 1
    assert "no LLM to write answers with" in result.err and "EVIGRAPH_LLM_MODEL" in result.err
    bad = run_cli("ask", QUESTION, "--db", str(db), "--max-context-tokens", "10", "--top-k", "0")
    assert bad.code == 1 and "invalid answer options: --top-k:" in bad.err and "--max-context-tokens:" in bad.err
    assert "(see `evigraph answer --help`)" in bad.err
