"""Every LLM feature against a real model: SmolLM2-135M-Instruct behind llama-cpp-python's
OpenAI-compatible server on loopback (`tests/llm/local_model.py`), through the CLI and MCP as a user
runs them. The model is tiny and often wrong; these tests check what evigraph does with what a
real model writes (extraction kept only where the passage names it, citation checks that run on a
real draft, failures reported in one line), never that the model is right.

Run them alone with `python -m pytest -m real_llm`; they skip, saying why, where the server or the
weights are not installed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CliResult, run_cli, write_corpus
from tests.llm.local_model import LocalModelServer, LocalModelUnavailable
from tests.mcp.conftest import call, citations, stdio_mcp_client

pytestmark = pytest.mark.real_llm

STATUSES = {"verified", "not_found", "unverified"}
"""What a citation check that ran can say of a draft."""
QUESTION = "Who founded Harbor Lab?"


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModelServer]:
    try:
        server = LocalModelServer()
    except LocalModelUnavailable as missing:
        pytest.skip(str(missing))
    with server:
        yield server


def llm_env(model: LocalModelServer) -> dict[str, str]:
    return {"EVIGRAPH_LLM_BASE_URL": model.url, "EVIGRAPH_LLM_MODEL": model.model, "EVIGRAPH_LLM_API_KEY": ""}


def cli(model: LocalModelServer, *args: str) -> CliResult:
    return run_cli(*args, env=llm_env(model), timeout=600)


@pytest.fixture(scope="module")
def extracted(model: LocalModelServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The test corpus ingested with `--extractor llm`: the knowledge base and the ingest's report."""
    base = tmp_path_factory.mktemp("real-llm")
    db = base / "kb.db"
    result = cli(model, "ingest", str(write_corpus(base / "docs")), "--db", str(db), "--extractor", "llm", "--json")
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    return db, result.json()


def rows(db: Path, query: str) -> list[list[Any]]:
    result = run_cli("cypher", query, "--db", str(db), "--json")
    assert result.code == 0, result.err
    data = result.json()
    return [list(row.values()) if isinstance(row, dict) else row for row in data["rows"]]


def test_llm_extraction_keeps_entities_named_in_their_passage(extracted: tuple[Path, dict[str, Any]]) -> None:
    db, report = extracted
    spend = report["llm"]
    assert spend["calls"] >= 1 and spend["input_tokens"] > 0 and spend["output_tokens"] > 0
    assert spend["calls"] - spend["failed_calls"] >= 1  # at least one reply was usable
    assert all(d["status"] == "created" for d in report["documents"])
    mentions = rows(db, "MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) RETURN e.name, c.text")
    assert mentions, "the model's reply yielded no entity at all"
    for name, text in mentions:
        assert name.casefold() in text.casefold(), f"{name!r} is stored as mentioned in a passage not naming it"


def test_json_schema_refused_by_the_server_falls_back_to_its_own_form(model: LocalModelServer) -> None:
    """llama-cpp-python's server refuses OpenAI's `json_schema` (HTTP 500); the client then sends the
    schema in the `json_object` form that server turns into a grammar, and the reply parses."""
    import asyncio

    from evigraph.providers.llms import OpenAICompatibleLLM

    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["city", "year"],
    }

    async def ask() -> tuple[Any, str, int]:
        async with OpenAICompatibleLLM(model.model, base_url=model.url, api_key="") as llm:
            result = await llm.chat(
                [{"role": "user", "content": "Harbor Lab was founded in Lisbon in 2014. Give its city and year."}],
                json_schema=schema,
                max_tokens=40,
            )
            return result.data, llm.json_support, llm.usage.calls

    data, support, calls = asyncio.run(ask())
    assert support == "json_object_schema"
    assert calls == 1  # the refused form cost no call
    assert isinstance(data, dict) and isinstance(data["city"], str) and isinstance(data["year"], int)


def test_ask_checks_the_citations_of_a_real_draft(
    model: LocalModelServer, extracted: tuple[Path, dict[str, Any]]
) -> None:
    db, _ = extracted
    result = cli(model, "ask", QUESTION, "--db", str(db), "--top-k", "3", "--json")
    assert result.code in (0, 1), result.err  # 1: the check did not verify the draft
    data = result.json()
    assert data["status"] in STATUSES, data
    assert data["verified"] == (data["status"] == "verified") and data["verdict"]
    assert data["usage"]["calls"] == 1 and data["usage"]["output_tokens"] > 0
    cited = set(data["citations"]["cited"])
    assert cited <= {p["n"] for p in data["passages"]} or data["status"] == "unverified"


def test_ask_stream_ends_with_the_same_check(model: LocalModelServer, extracted: tuple[Path, dict[str, Any]]) -> None:
    db, _ = extracted
    streamed = cli(model, "ask", QUESTION, "--db", str(db), "--top-k", "3", "--stream")
    assert streamed.code in (0, 1), streamed.err
    assert "Traceback" not in streamed.err
    last = streamed.out.rstrip().splitlines()[-1]
    assert last.startswith("Citations: "), streamed.out
    verdicts = {"Citations: verified", "Citations: NOT verified", "Citations: not in the knowledge base"}
    assert any(last.startswith(v) for v in verdicts), last
    assert (streamed.code == 0) == last.startswith(("Citations: verified", "Citations: not in")), last


def test_finalize_with_the_llm_resolver_judges_a_near_duplicate(model: LocalModelServer, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Marta Oliveira founded Harbor Lab in Lisbon in 2014.\n", encoding="utf-8")
    (docs / "b.txt").write_text("Marta Olivera leads the ocean team at Harbor Lab.\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(docs), "--db", str(db), "--extractor", "rules", "-q").code == 0
    result = cli(model, "finalize", "--resolver", "llm", "--db", str(db), "--json")
    assert result.code == 0, result.err
    resolution = result.json()["resolution"]
    assert resolution["resolver"] == "llm" and resolution["candidates"] >= 1
    assert resolution["judged"] + resolution["unjudged"] == resolution["candidates"]
    assert resolution["llm"]["calls"] >= 1 and resolution["llm"]["input_tokens"] > 0
    assert resolution["llm"]["calls"] > resolution["llm"]["failed_calls"] and resolution["judged"] >= 1
    names = {row[0] for row in rows(db, "MATCH (e:Entity) RETURN e.name")}
    merged = resolution["merged"] == 1
    assert ("Marta Olivera" in names) != merged  # a merge the model confirmed took effect, or nothing moved


def test_ingest_with_the_llm_verified_resolver_judges_a_new_name(model: LocalModelServer, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Marta Oliveira founded Harbor Lab in Lisbon in 2014.\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(docs), "--db", str(db), "--extractor", "rules", "-q").code == 0
    (docs / "b.txt").write_text("Marta Olivera leads the ocean team at Harbor Lab.\n", encoding="utf-8")
    flags = ("--db", str(db), "--extractor", "rules", "--resolver", "llm_verified", "--json")
    result = cli(model, "ingest", str(docs), *flags)
    assert result.code == 0, result.err  # whatever the model says, the document is ingested
    resolution = result.json()["resolution"]
    assert resolution["resolver"] == "llm_verified" and resolution["candidates"] >= 1
    assert resolution["judged"] + resolution["unjudged"] == resolution["candidates"] - resolution["known"]
    assert resolution["llm_calls"] >= 1 and resolution["input_tokens"] > 0
    names = {row[0] for row in rows(db, "MATCH (e:Entity) RETURN e.name")}
    assert ("Marta Olivera" in names) != (resolution["mapped"] == 1)  # mapped onto Marta Oliveira, or its own


def test_contextual_chunker_keeps_the_documents_words(model: LocalModelServer, tmp_path: Path) -> None:
    sections = {
        "History": "Harbor Lab was founded in Lisbon in 2014 by Marta Oliveira. It began with two researchers.",
        "Projects": "The lab runs ReefWatch, a camera network near the Berlengas islands. It counts fish hourly.",
        "Funding": "It is funded by the Portuguese Sea Agency. The grant was renewed in 2022 for five years.",
    }
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "harbor.md").write_text(
        "# Harbor Lab\n\n" + "\n\n".join(f"## {k}\n\n{v}" for k, v in sections.items()) + "\n", encoding="utf-8"
    )
    db = tmp_path / "kb.db"
    flags = ("--chunker", "contextual", "--extractor", "rules", "--json")
    result = cli(model, "ingest", str(docs), "--db", str(db), *flags)
    assert result.code == 0, result.err
    report = result.json()
    assert report["llm"]["contexts"] == 3 and report["llm"]["calls"] >= 1
    assert report["llm"]["calls"] > report["llm"]["failed_calls"]  # a reply was read, not only sent
    texts = [row[0] for row in rows(db, "MATCH (c:Chunk) RETURN c.text")]
    for body in sections.values():  # what a citation quotes is the document's own text, context or not
        assert any(body in text for text in texts), body


async def test_the_answer_tool_over_mcp(model: LocalModelServer, extracted: tuple[Path, dict[str, Any]]) -> None:
    db, _ = extracted
    async with stdio_mcp_client(db, env=llm_env(model)) as client:
        assert "answer" in {t.name for t in (await client.list_tools()).tools}
        answered = await call(client, "answer", {"question": QUESTION, "top_k": 3})
        assert answered["status"] in STATUSES and answered["verdict"]
        numbers = [p["n"] for p in answered["passages"]]
        assert numbers, answered
        checked = await citations(client, f"Harbor Lab is a research group in Lisbon [{numbers[0]}].")
        assert checked["cited"] == [numbers[0]]  # the agent's own check knows the answer's numbers


def test_doctor_sees_the_served_model(model: LocalModelServer) -> None:
    result = cli(model, "doctor", "--json")
    checks = {(c["area"], c["name"]): c for c in json.loads(result.out)["checks"]}
    llm = checks[("llm", f"openai:{model.model}")]
    assert llm["ok"] and "reachable" in llm["detail"], llm
