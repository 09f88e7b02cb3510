"""HTTP Basic credentials in EVIGRAPH_LLM_BASE_URL (`http://user:password@host/v1`) never show.

httpx sends them as `Authorization: Basic base64(user:password)`; the replay server echoes that
header, the password and the URL in its error, as a misconfigured proxy or server does. Neither the
password nor its base64 form may reach the CLI's output, the REST body, the MCP text or the server's log.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.api.conftest import error_of, serving
from tests.conftest import CliResult, run_cli, write_corpus
from tests.llm.replay_server import ReplayServer, Reply, Request, error_reply
from tests.mcp.conftest import QUESTION, copy_db, error_text, http_client
from tests.mcp.conftest import sample_db as sample_db  # the session fixture, shared with the MCP tests

from evigraph.masking import mask_credentials, mask_secrets, url_secrets

USER, PASSWORD = "alice", "hunter2-Pa55word"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def _echo_credentials(request: Request) -> Reply | None:
    if request.method != "POST":
        return None
    sent = request.header("authorization") or ""
    return error_reply(
        401,
        f"Unauthorized: Authorization: {sent} rejected; password {PASSWORD} for http://{USER}:{PASSWORD}@upstream/v1",
        headers={"WWW-Authenticate": 'Basic realm="llm"', "X-Echo-Authorization": sent},
    )


@pytest.fixture
def echoing() -> Iterator[ReplayServer]:
    with ReplayServer(answer=_echo_credentials) as server:
        yield server


def llm_env(server: ReplayServer) -> dict[str, str]:
    url = server.url.replace("http://", f"http://{USER}:{PASSWORD}@")
    return {"EVIGRAPH_LLM_BASE_URL": url, "EVIGRAPH_LLM_MODEL": "test-model", "EVIGRAPH_LOG_LEVEL": "DEBUG"}


def hidden(text: str) -> bool:
    return PASSWORD not in text and BASIC not in text


def sent_basic(server: ReplayServer) -> None:
    """The credentials did travel, as the header the server echoed."""
    assert server.chat_requests() and server.chat_requests()[0].header("authorization") == f"Basic {BASIC}"


def test_the_cli_never_shows_them(echoing: ReplayServer, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    docs = write_corpus(tmp_path / "docs")
    assert run_cli("ingest", str(docs), "--db", str(db), "-q", "--extractor", "rules").code == 0
    env = llm_env(echoing)
    runs: list[CliResult] = [
        run_cli("ask", QUESTION, "--db", str(db), env=env),
        run_cli("ask", QUESTION, "--db", str(db), "--json", env=env),
        run_cli("ingest", str(docs), "--db", str(tmp_path / "llm.db"), "--extractor", "llm", env=env),
        run_cli("doctor", env=env),
    ]
    sent_basic(echoing)
    for result in runs[:3]:
        assert result.code == 1 and "Basic ***" in result.err, result.err
    for result in runs:
        assert hidden(result.out + result.err), result.out + result.err
    assert f"{USER}:***@" in runs[3].out  # doctor names the endpoint, without its password


async def test_the_rest_body_the_mcp_text_and_the_log_never_show_them(
    echoing: ReplayServer, sample_db: Path, tmp_path: Path
) -> None:
    db = copy_db(sample_db, tmp_path)
    with serving(tmp_path, "--db", str(db), "--with-mcp", env=llm_env(echoing)) as server:
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as rest:
            response = await rest.post("/api/tools/answer", json={"question": QUESTION})
            body = error_of(response, 400)
            assert "Basic ***" in body["error"] and hidden(response.text), response.text
        async with http_client(f"{server.base}/mcp") as mcp:
            text = await error_text(mcp, "answer", {"question": QUESTION})
            assert "Basic ***" in text and hidden(text), text
        log = server.stderr()
    sent_basic(echoing)
    assert "x-echo-authorization" in log.lower()  # httpcore logged the echoed header at DEBUG...
    assert hidden(log)  # ...masked, as every other line


def test_basic_credentials_are_masked_in_every_form() -> None:
    secrets = url_secrets(f"http://{USER}:{PASSWORD}@host/v1", "falkordb://bob:p%40ss-word@db:6379/kb")
    assert {PASSWORD, f"{USER}:{PASSWORD}", BASIC, "p@ss-word", "bob:p@ss-word"} <= set(secrets)
    for mask in (mask_credentials, mask_secrets):
        assert mask(f"Authorization: Basic {BASIC}") == "Authorization: Basic ***"
        assert mask("falkordb://bob:p%40ss-word@db:6379/kb") == "falkordb://bob:***@db:6379/kb"
        assert mask(f"echoed {PASSWORD} and {BASIC}", secrets) == "echoed *** and ***"
        assert mask("basic information, Basic aGVsbG8=") == "basic information, Basic aGVsbG8="  # no user:password
