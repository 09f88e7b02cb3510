"""LLM extraction through the real client, a real replay server and a real Kuzu file.

The model is scripted per passage (what it says depends on the passage's text), so the batching,
the alignment to the text, the ontology pruning, the cache, the ceiling and the failure paths all
run as they would against a served model. No test may leave the API key in the logs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.llm.conftest import KEY
from tests.llm.conftest import key_client as client
from tests.llm.extraction_answers import extraction_answer, passages
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply, rate_limited

from evigraph import KnowledgeBase, Toolkit
from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking.sentence import SentenceTokenCapChunking
from evigraph.ingest.extraction.llm import LLMExtraction
from evigraph.models import EntityType, IngestStatus, Ontology, RelationType

pytestmark = pytest.mark.usefixtures("no_key_in_logs")  # no test may leave the API key in the logs


ONTOLOGY = Ontology(
    entities=(EntityType(label="Person"), EntityType(label="Organization"), EntityType(label="Location")),
    relations=(
        RelationType(type="WORKS_AT", patterns=(("Person", "Organization"),)),
        RelationType(type="BASED_IN", patterns=(("Organization", "Location"),)),
    ),
)

ADA = "Ada Lovelace works at Analytical Engines Ltd. The company is based in London."
GRACE = "Grace Hopper works at Remington Rand."


def model(text: str, candidates: list[tuple[str, str]]) -> dict[str, Any]:
    """The scripted model: what a careful model says about the test passages, plus a few mistakes."""
    if text.startswith("Ada Lovelace"):
        return {
            "e": [
                {"n": "Ada Lovelace", "t": "Person"},
                {"n": "Analytical Engines Ltd", "t": "Organization"},
                {"n": "london", "t": "location"},  # case differs from the text and the ontology: still aligned
                {"n": "Charles Babbage", "t": "Person"},  # not in the passage: dropped and counted
            ],
            "r": [
                {"s": "Ada Lovelace", "t": "WORKS_AT", "o": "Analytical Engines Ltd", "f": "Ada works at the firm."},
                {"s": "Analytical Engines Ltd", "t": "based in", "o": "London", "f": "It is based in London."},
                {"s": "Ada Lovelace", "t": "LIVES_IN", "o": "London", "f": "Ada lives in London."},  # not declared
                {"s": "Charles Babbage", "t": "WORKS_AT", "o": "Analytical Engines Ltd", "f": "He works there."},
            ],
        }
    names = [{"n": m, "t": "Person" if i == 0 else "Organization"} for i, m in enumerate(_two_names(text))]
    rel = [{"s": names[0]["n"], "t": "WORKS_AT", "o": names[1]["n"], "f": text}] if len(names) == 2 else []
    return {"e": names, "r": rel}


def _two_names(text: str) -> list[str]:
    if " works at " not in text:
        return []
    person, _, rest = text.partition(" works at ")
    return [person.strip(), rest.split(".")[0].strip()]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(answer=extraction_answer(model)) as replay:
        yield replay


@pytest.fixture
async def kb(tmp_path: Path, server: ReplayServer) -> AsyncIterator[KnowledgeBase]:
    async with (
        client(server) as llm,
        KnowledgeBase(tmp_path / "kb.db", ontology=ONTOLOGY, extractor="llm", llm=llm) as k,
    ):
        yield k


async def relations(kb: KnowledgeBase) -> list[dict[str, Any]]:
    found = await kb.cypher_query(
        "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.name AS s, a.label AS sl, r.type AS t, b.name AS o, "
        "b.label AS ol, r.fact AS f, string_split(r.source_chunks, ' ') AS chunks ORDER BY s, t"
    )
    return list(found.rows)


async def test_typed_entities_and_relations_with_facts_and_provenance(kb: KnowledgeBase, server: ReplayServer) -> None:
    report = await kb.ingest(text=ADA, key="ada")
    assert report.ok and report.documents[0].status == IngestStatus.created
    rows = await relations(kb)
    assert [(r["s"], r["sl"], r["t"], r["o"], r["ol"]) for r in rows] == [
        ("Ada Lovelace", "Person", "WORKS_AT", "Analytical Engines Ltd", "Organization"),
        ("Analytical Engines Ltd", "Organization", "BASED_IN", "London", "Location"),
    ]
    assert rows[0]["f"] == "Ada works at the firm."
    passage = (await kb.search_passages("Lovelace", mode="lexical")).hits[0]
    assert all(r["chunks"] == [passage.id] for r in rows)  # provenance: the passage that states it
    assert (await kb.status()).labels == {"Location": 1, "Organization": 1, "Person": 1}
    assert report.pruned.relation_types == {"LIVES_IN": 1}
    assert report.llm is not None
    assert (report.llm.unaligned_entities, report.llm.dangling_relations) == (1, 1)
    assert (report.llm.calls, report.llm.passages) == (1, 1) and server.calls() == 1
    found = await kb.search_entities("London")
    assert any(e.name == "London" and e.label == "Location" and e.support for e in found.hits)


async def test_passages_of_several_documents_share_a_call(kb: KnowledgeBase, server: ReplayServer) -> None:
    from evigraph.ingest.text_documents import text_document

    docs = [text_document(f"Person{i} Smith works at Company{i} Inc.", f"doc-{i}") for i in range(6)]
    report = await kb.ingest_documents(docs)
    assert report.ok and server.calls() == 1
    assert report.llm is not None and (report.llm.calls, report.llm.passages) == (1, 6)
    assert len(passages(server.chat_requests()[0])) == 6
    assert len(await relations(kb)) == 6


async def test_429_then_success_is_retried(kb: KnowledgeBase, server: ReplayServer) -> None:
    server.queue(rate_limited(0))
    report = await kb.ingest(text=GRACE, key="grace")
    assert report.ok and server.calls() == 2
    assert report.llm is not None and report.llm.calls == 1
    assert [(r["s"], r["t"], r["o"]) for r in await relations(kb)] == [("Grace Hopper", "WORKS_AT", "Remington Rand")]


async def test_timeout_and_malformed_json_fail_their_document_and_leave_the_others(
    tmp_path: Path, server: ReplayServer
) -> None:
    scripted = extraction_answer(model)

    def answer(request: Request) -> Reply | None:
        if "Slow Sam" in request.prompt:
            return Reply(body={}, delay=3)
        if "Garbled Gus" in request.prompt:
            return chat_reply('{"passages": [{"p": 1, "e": [')
        return scripted(request)

    server.answer = answer
    texts = {"ok": GRACE, "slow": "Slow Sam works at Snail Mail Co.", "bad": "Garbled Gus works at Noise Ltd."}
    async with (
        client(server, timeout=1) as llm,
        KnowledgeBase(tmp_path / "kb.db", ontology=ONTOLOGY, extractor="llm", llm=llm) as kb,
    ):
        from evigraph.ingest.text_documents import text_document

        report = await kb.ingest_documents([text_document(t, k) for k, t in texts.items()])
        by_key = {d.key: d for d in report.documents}
        assert by_key["ok"].status == IngestStatus.created
        assert by_key["slow"].status == IngestStatus.failed
        assert "did not answer within 1 s" in (by_key["slow"].error or "")
        assert by_key["bad"].status == IngestStatus.failed
        assert "malformed JSON" in (by_key["bad"].error or "")
        assert [r["s"] for r in await relations(kb)] == ["Grace Hopper"]
        assert (await kb.source_status("bad")).state == "failed"


async def test_a_failed_call_sends_again_only_its_own_documents(tmp_path: Path, server: ReplayServer) -> None:
    """Found with the real model: one failed call of a batch used to send every document again one by
    one, and the passages the model had skipped (never cached) cost a second call each."""
    from evigraph.ingest.text_documents import text_document

    def answer(request: Request) -> Reply | None:
        if "Garbled Gus" in request.prompt:
            return chat_reply('{"passages": [{"p": 1, "e": [')
        return chat_reply('{"passages": []}')  # a small model skipping its passage

    server.answer = answer
    texts = {f"doc-{i}": f"Person{i} Smith works at Company{i} Inc." for i in range(3)}
    texts["bad"] = "Garbled Gus works at Noise Ltd."
    extractor = LLMExtraction(passages_per_call=1)
    async with client(server) as llm, KnowledgeBase(tmp_path / "kb.db", ontology=ONTOLOGY, llm=llm) as kb:
        report = await kb.ingest_documents([text_document(t, k) for k, t in texts.items()], extractor=extractor)
        statuses = {d.key: d.status for d in report.documents}
    assert statuses == {**dict.fromkeys(list(texts)[:3], IngestStatus.created), "bad": IngestStatus.failed}
    sent = [r.prompt for r in server.chat_requests()]
    assert len(sent) == 5  # one call per document, then the failed document alone
    assert sum("Garbled Gus" in prompt for prompt in sent) == 2
    assert report.llm is not None and (report.llm.calls, report.llm.failed_calls) == (5, 2)


async def test_token_ceiling_stops_before_it_and_reports_what_is_left(tmp_path: Path, server: ReplayServer) -> None:
    from evigraph.ingest.text_documents import text_document

    docs = [text_document(f"Person{i} Smith works at Company{i} Inc.", f"doc-{i}") for i in range(6)]
    ceiling = 2_000  # a call reserves its input (about 550 tokens) plus its output cap (320): two fit
    extractor = LLMExtraction(passages_per_call=1)
    db = tmp_path / "kb.db"
    async with client(server) as llm, KnowledgeBase(db, ontology=ONTOLOGY, llm=llm, batch_documents=2) as kb:
        await kb.ingest_documents(docs[5:], extractor=extractor)
        before = server.calls()
        report = await kb.ingest_documents(docs, extractor=extractor, max_llm_tokens=ceiling)
        assert report.llm is not None and report.llm.ceiling_reached
        status = {d.key: d.status for d in report.documents}
        written = [key for key, s in status.items() if s == IngestStatus.created]
        assert status["doc-5"] == IngestStatus.unchanged  # read after the ceiling, in a later batch: free
        assert 1 <= len(written) < 5 and sorted([*written, *report.left, "doc-5"]) == [d.key for d in docs]
        assert report.llm.total_tokens <= ceiling and report.llm.calls == len(written) == server.calls() - before
        assert (await kb.status()).documents == len(written) + 1  # what was written is kept
        assert (await kb.source_status(report.left[-1])).state == "unknown"  # left, not failed

        again = await kb.ingest_documents(docs, extractor=extractor)  # no ceiling: the rest is ingested
        assert not again.left and (await kb.status()).documents == 6
        assert again.llm is not None and again.llm.calls == len(report.left)  # nothing asked twice


async def test_unchanged_costs_no_call_and_a_changed_document_only_its_changed_passages(
    tmp_path: Path, server: ReplayServer
) -> None:
    sentences = ["Ann Lee works at Acme Corp.", "Bob Ray works at Beta Labs.", "Cy Fox works at Core Group."]
    chunker = SentenceTokenCapChunking(max_tokens=8, overlap_sentences=0)
    extractor = LLMExtraction(passages_per_call=1)
    async with (
        client(server) as llm,
        KnowledgeBase(tmp_path / "kb.db", ontology=ONTOLOGY, chunker=chunker, extractor=extractor, llm=llm) as kb,
    ):
        first = await kb.ingest(text=" ".join(sentences), key="team")
        assert first.documents[0].chunks == 3 and server.calls() == 3

        same = await kb.ingest(text=" ".join(sentences), key="team")
        assert same.documents[0].status == IngestStatus.unchanged and server.calls() == 3
        assert same.llm is not None and same.llm.calls == 0

        sentences[1] = "Bo Ray works at Delta Labs."
        changed = await kb.ingest(text=" ".join(sentences), key="team")
        assert changed.documents[0].status == IngestStatus.updated
        assert changed.llm is not None
        assert (changed.llm.calls, changed.llm.passages, changed.llm.cached_passages) == (1, 1, 2)
        assert server.calls() == 4 and "Bo Ray" in server.chat_requests()[-1].prompt
        assert {r["s"] for r in await relations(kb)} == {"Ann Lee", "Bo Ray", "Cy Fox"}

    async with KnowledgeBase(tmp_path / "kb.db") as later:  # the totals outlive the session
        total = (await later.status()).llm
        assert total is not None and (total.calls, total.passages, total.cached_passages) == (4, 4, 2)
        assert total.input_tokens > 0 and total.tokens_per_passage > 0


async def test_no_llm_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="llm") as kb:
        with pytest.raises(ConfigurationError) as info:
            await kb.ingest(text=GRACE, key="grace")
    assert "EVIGRAPH_LLM_MODEL" in info.value.hint and "--llm" in info.value.hint
    assert not (tmp_path / "kb.db").exists()


async def test_search_questions_do_not_call_the_model(kb: KnowledgeBase, server: ReplayServer) -> None:
    await kb.ingest(text=GRACE, key="grace")
    calls = server.calls()
    result = await kb.retrieve("Where does Grace Hopper work?")
    assert result.passages and server.calls() == calls


async def test_agent_ingest_runs_under_the_operator_ceiling(kb: KnowledgeBase, server: ReplayServer) -> None:
    toolkit = Toolkit(kb, plan_limits={"extractors": ["llm"], "max_llm_tokens": 10})
    result = await toolkit.call("ingest", {"text": GRACE, "document_key": "grace", "max_llm_tokens": 1_000_000})
    assert result.left == ["grace"] and server.calls() == 0  # 10 tokens: the call was never sent
    assert result.llm is not None and result.llm.ceiling_reached
    assert "left at the LLM token ceiling" in result.to_llm_text()


def test_configuration_error_stops_the_cli_with_one_line(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.txt").write_text(f"Person{i} Smith works at Company{i} Inc.", encoding="utf-8")
    with ReplayServer() as server:
        server.answer = lambda _request: error_reply(401, "Incorrect API key provided", code="invalid_api_key")
        env = {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_API_KEY": KEY}
        done = cli(
            "ingest",
            str(folder),
            "--db",
            str(tmp_path / "kb.db"),
            "--extractor",
            "llm",
            "--llm",
            "openai:test-model",
            "--quiet",
            env=env,
        )
    assert done.code == 1
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "refused the API key" in lines[0]
    assert KEY not in done.err + done.out


def test_cli_ceiling_reports_the_cost_and_what_is_left(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.txt").write_text(f"Person{i} Smith works at Company{i} Inc.", encoding="utf-8")
    db = str(tmp_path / "kb.db")
    with ReplayServer(answer=extraction_answer(model)) as server:
        env = {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_API_KEY": KEY}
        args = ("ingest", str(folder), "--db", db, "--extractor", "llm", "--llm", "openai:test-model")
        stopped = cli(*args, "--max-llm-tokens", "5", env=env)
        assert stopped.code == 1 and server.calls() == 0
        assert "stopped at the LLM token ceiling (5): 3 documents not ingested" in stopped.err
        done = cli(*args, "--json", env=env)
        assert done.code == 0 and done.json()["llm"]["calls"] == 1 and done.json()["left"] == []
        status = cli("status", "--db", db, env=env)
    assert "llm             1 calls" in status.out and "for 3 passages" in status.out
    assert KEY not in stopped.err + done.out + status.out
