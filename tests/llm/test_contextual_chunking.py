"""Contextual chunking through the real client, a real replay server and a real Kuzu file.

The scripted model writes a context per passage from what the prompt shows, so the batching, the
storage beside the passage, the search and embedding input, the cache, the token ceiling and the
failure paths run as they would against a served model. No test may leave the API key in the logs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.llm.conftest import KEY
from tests.llm.conftest import key_client as client
from tests.llm.context_answers import context_answer, title_and_passages
from tests.llm.replay_server import ReplayServer, Reply, Request, chat_reply, error_reply
from tests.tools.conftest import HashEmbedder

from evigraph import KnowledgeBase, Toolkit
from evigraph.errors import ConfigurationError, CypherRefused
from evigraph.ingest.chunking.contextual import ContextualChunking, read_contexts, user_prompt
from evigraph.ingest.chunking.sentence import SentenceTokenCapChunking
from evigraph.ingest.text_documents import text_document
from evigraph.models import IngestStatus, LoadedDocument
from evigraph.providers.llms import OpenAICompatibleLLM

pytestmark = pytest.mark.usefixtures("no_key_in_logs")  # no test may leave the API key in the logs


HARBOUR = (
    "The Quokka Act governed the harbour of Port Wren from 1950. Ships paid a fee for every mast they carried. "
    "It was repealed in 1998 after the harbour closed."
)
REPEAL_CONTEXT = "The Quokka Act of Port Wren ended when the harbour closed."


def model(title: str, text: str) -> str:
    """The scripted model: names the act a passage's pronoun stands for."""
    return REPEAL_CONTEXT if "repealed" in text else f"Part of {title}."


def sentences() -> SentenceTokenCapChunking:
    return SentenceTokenCapChunking(max_tokens=20, overlap_sentences=0)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(answer=context_answer(model)) as replay:
        yield replay


class RecordingEmbedder(HashEmbedder):
    """Bag-of-words vectors, and every text it was asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        return super().embed(texts)


async def test_context_is_stored_searched_and_embedded_but_never_shown(tmp_path: Path, server: ReplayServer) -> None:
    embedder = RecordingEmbedder()
    async with (
        client(server) as llm,
        KnowledgeBase(
            tmp_path / "kb.db",
            chunker=ContextualChunking(sentences()),
            extractor="rules",
            embedder=embedder,
            llm=llm,
        ) as kb,
    ):
        report = await kb.ingest(text=HARBOUR, key="harbour", title="Harbour notes")
        assert report.ok and report.documents[0].chunks == 3
        assert server.calls() == 1  # the three passages of the document share one call
        assert report.llm is not None and (report.llm.calls, report.llm.contexts, report.llm.passages) == (1, 3, 0)

        # A question naming what only the context says finds the passage, ranked first.
        found = await kb.search_passages("Quokka repealed", mode="lexical")
        top = found.hits[0]
        assert top.text == "It was repealed in 1998 after the harbour closed." and "Quokka" not in top.text
        assert not found.match.weak_match  # the context counts as the passage's words
        assert top.id in {h.id for h in (await kb.search_passages("Quokka", mode="lexical")).hits}

        # Shown nowhere: not in the passage read, not in the agent's text, not in the results.
        read = (await kb.read_passages([top.id])).passages[0]
        assert read.text == top.text and REPEAL_CONTEXT not in read.model_dump_json()
        answer = await kb.retrieve("When was the Quokka Act repealed?")
        assert REPEAL_CONTEXT not in answer.to_context() and REPEAL_CONTEXT not in answer.model_dump_json()
        assert REPEAL_CONTEXT not in found.model_dump_json()

        # Offsets stay the document's own: the passage is the document's text at its span.
        chunks = (await kb.cypher_query("MATCH (c:Chunk) RETURN c.text AS t, c.char_start AS s, c.char_end AS e")).rows
        assert all(HARBOUR[r["s"] : r["e"]] == r["t"] for r in chunks)

        # Hidden from Cypher and the ontology like a vector.
        with pytest.raises(CypherRefused):
            await kb.cypher_query("MATCH (c:Chunk) RETURN c.passage_context")
        nodes = (await kb.cypher_query("MATCH (c:Chunk) RETURN c")).rows
        assert nodes and all("passage_context" not in r["c"] and REPEAL_CONTEXT not in str(r) for r in nodes)
        assert "passage_context" not in str(await kb.store.schema_tables())  # type: ignore[union-attr]

        # Stored with the passage, and embedded with it: title, context, then the text.
        assert f"Harbour notes\n{REPEAL_CONTEXT}\n{top.text}" in embedder.texts
        stored = await kb.store.document_passages("harbour")  # type: ignore[union-attr]
        assert [c.context for c in stored] == ["Part of Harbour notes.", "Part of Harbour notes.", REPEAL_CONTEXT]


async def test_reingest_costs_no_call_and_a_change_only_its_neighbourhood(tmp_path: Path, server: ReplayServer) -> None:
    long = " ".join(f"Clause {i} sets the fee for vessel class {i} at {i} crowns." for i in range(12))
    chunker = ContextualChunking(sentences(), window_tokens=12, head_tokens=0)
    async with (
        client(server) as llm,
        KnowledgeBase(tmp_path / "kb.db", chunker=chunker, extractor="rules", llm=llm) as kb,
    ):
        first = await kb.ingest(text=long, key="fees")
        assert first.ok and first.llm is not None and first.llm.contexts == 12 and server.calls() == 2  # 8 + 4

        same = await kb.ingest(text=long, key="fees")
        assert same.documents[0].status == IngestStatus.unchanged and server.calls() == 2
        assert same.llm is not None and same.llm.calls == 0

        again = await kb.ingest(text=long, key="fees", reextract=True)  # chunked again: contexts from the cache
        assert again.documents[0].status == IngestStatus.updated and server.calls() == 2
        assert again.llm is not None and (again.llm.calls, again.llm.cached_contexts) == (0, 12)

        changed = await kb.ingest(text=long.replace("class 6 at 6", "class 6 at 60"), key="fees")
        assert changed.documents[0].status == IngestStatus.updated and server.calls() == 3
        assert changed.llm is not None and changed.llm.cached_contexts >= 9  # the changed passage and its neighbours
        asked = title_and_passages(server.chat_requests()[-1])[1]
        assert any("60 crowns" in p for p in asked) and len(asked) <= 3

    async with KnowledgeBase(tmp_path / "kb.db") as later:  # the totals outlive the session
        total = (await later.status()).llm
        assert total is not None and total.calls == 3 and total.contexts == 12 + len(asked)
        assert total.cached_contexts == 12 + changed.llm.cached_contexts and total.tokens_per_passage > 0


async def test_token_ceiling_counts_context_calls(tmp_path: Path, server: ReplayServer) -> None:
    docs = [text_document(HARBOUR.replace("Quokka", f"Quokka{i}"), f"doc-{i}", "Harbour notes") for i in range(4)]
    async with (
        client(server) as llm,
        KnowledgeBase(
            tmp_path / "kb.db", chunker=ContextualChunking(sentences()), extractor="rules", llm=llm, batch_documents=1
        ) as kb,
    ):
        report = await kb.ingest_documents(docs, max_llm_tokens=1_000)  # a call reserves about 450: two fit
        assert report.llm is not None and report.llm.ceiling_reached and report.llm.total_tokens <= 1_000
        written = [d.key for d in report.documents if d.status == IngestStatus.created]
        assert 1 <= len(written) < 4 and sorted(written + report.left) == [d.key for d in docs]
        assert report.llm.calls == len(written) == server.calls()
        assert (await kb.source_status(report.left[0])).state == "unknown"  # left, not failed

        rest = await kb.ingest_documents(docs)
        assert not rest.left and (await kb.status()).documents == 4
        assert rest.llm is not None and rest.llm.calls == len(report.left)  # nothing asked twice


async def test_a_failure_fails_only_its_document(tmp_path: Path, server: ReplayServer) -> None:
    scripted = context_answer(model)

    def answer(request: Request) -> Reply | None:
        if "Slow Sam" in request.prompt:
            return Reply(body={}, delay=3)
        if "Garbled Gus" in request.prompt:
            return chat_reply('{"contexts": [{"p": 1, "c": ')
        return scripted(request)

    server.answer = answer
    texts = {
        "ok": HARBOUR,
        "slow": "Slow Sam ran the ferry across the bay for thirty years. He sold it to his cousin in 1990.",
        "bad": "Garbled Gus kept the light on the northern cape. He left it to the navy in 1985.",
    }
    async with (
        client(server, timeout=1) as llm,
        KnowledgeBase(tmp_path / "kb.db", chunker=ContextualChunking(sentences()), extractor="rules", llm=llm) as kb,
    ):
        report = await kb.ingest_documents([text_document(t, k) for k, t in texts.items()])
        by_key = {d.key: d for d in report.documents}
        assert by_key["ok"].status == IngestStatus.created
        assert by_key["slow"].status == IngestStatus.failed
        assert "passage contexts" in (by_key["slow"].error or "")
        assert "did not answer within 1 s" in (by_key["slow"].error or "")
        assert by_key["bad"].status == IngestStatus.failed and "malformed JSON" in (by_key["bad"].error or "")
        assert (await kb.status()).documents == 1 and (await kb.source_status("bad")).state == "failed"


async def test_no_llm_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", chunker="contextual", extractor="rules") as kb:
        with pytest.raises(ConfigurationError) as info:
            await kb.ingest(text=HARBOUR, key="harbour")
    assert "contextual chunker needs an LLM" in str(info.value)
    assert "EVIGRAPH_LLM_MODEL" in info.value.hint and "--llm" in info.value.hint
    assert not (tmp_path / "kb.db").exists()

    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:  # an existing one: nothing written
        assert (await kb.ingest(text="Ships paid a fee.", key="fee")).ok
        with pytest.raises(ConfigurationError):
            await kb.ingest_documents([text_document(HARBOUR, "harbour")], chunker="contextual")
        assert (await kb.status()).documents == 1


def test_cli_contextual_chunker_reports_its_cost_and_a_rejected_key_stops_it(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "harbour.md").write_text(
        "# Harbour\n\n## The Act\n\nThe Quokka Act governed the harbour.\n\n## Its end\n\nIt was repealed in 1998.\n",
        encoding="utf-8",
    )
    db = str(tmp_path / "kb.db")
    args = ("ingest", str(folder), "--db", db, "--chunker", "contextual", "--extractor", "rules")
    with ReplayServer(answer=context_answer(model)) as server:
        env = {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_API_KEY": KEY}
        done = cli(*args, "--llm", "openai:test-model", env=env)
        assert done.code == 0 and server.calls() == 1
        assert "1 calls" in done.err and "contexts for 2 passages" in done.err
        prompt = server.chat_requests()[0].messages[1]["content"]
        assert "Sections: ⟦1⟧ Harbour > The Act; ⟦2⟧ Harbour > Its end" in prompt
        status = cli("status", "--db", db, env=env)
        assert "contexts for 2 passages" in status.out
    with ReplayServer() as server:
        server.answer = lambda _request: error_reply(401, "Incorrect API key provided", code="invalid_api_key")
        env = {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_API_KEY": KEY}
        (folder / "harbour.md").write_text("# Harbour\n\n## Fees\n\nShips paid.\n\n## Masts\n\nPer mast.\n")
        (folder / "more.md").write_text("# More\n\n## Light\n\nA lighthouse.\n\n## Fire\n\nIt burned.\n")
        stopped = cli(*args, "--llm", "openai:test-model", "--quiet", env=env)
    assert stopped.code == 1
    lines = stopped.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "refused the API key" in lines[0]
    assert KEY not in done.err + done.out + status.out + stopped.err + stopped.out


async def test_agents_get_it_only_when_the_operator_allows_it(tmp_path: Path, server: ReplayServer) -> None:
    root = tmp_path / "root"
    root.mkdir()
    long = " ".join(f"Clause {i} sets the fee for vessel class {i} at {i} crowns." for i in range(60))
    (root / "a.txt").write_text(long, encoding="utf-8")
    (root / "b.txt").write_text(long.replace("fee", "toll"), encoding="utf-8")  # passages of the default chunker
    rules = [{"match": "*", "chunker": "contextual"}]
    async with client(server) as llm, KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm) as kb:
        cheap = Toolkit(kb, files_root=root)
        result = await cheap.call("ingest", {"files": ["a.txt"], "plan": rules})
        assert "not allowed" in result.to_llm_text() and server.calls() == 0

        allowed = Toolkit(kb, files_root=root, plan_limits={"chunkers": ["contextual"]})
        result = await allowed.call("ingest", {"files": ["b.txt"], "plan": rules})
        assert result.llm is not None and result.llm.contexts >= 2 and server.calls() == 1


def test_the_prompt_marks_each_passage_and_shows_only_its_neighbourhood() -> None:
    far = " ".join(f"Filler sentence number {i} about nothing." for i in range(200))
    text = f"The Quokka Act is the subject. {far} It was repealed. {far} The end."
    doc = LoadedDocument(key="k", title="Acts", text=text, loader="text")
    chunks = sentences().chunk(doc)
    chunker = ContextualChunking(sentences(), window_tokens=10, head_tokens=8)
    target = next(i for i, c in enumerate(chunks) if "repealed" in c.text)
    plan = chunker._passages(OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1"), doc, chunks)
    prompt = user_prompt(doc, chunker._head(text), [plan[target]])
    assert prompt.startswith("Title: Acts\nDocument:\nThe Quokka Act is the subject.")
    assert prompt.count("⟦1⟧") == 1 and "It was repealed." in prompt.partition("⟦1⟧")[2]
    assert prompt.count("[...]") == 2 and len(prompt) < 300  # 400 filler sentences left out

    assert read_contexts({"contexts": [{"p": 2, "c": "  two\n words "}, {"p": 9, "c": "x"}, {"p": 1}]}, 2, "m") == {
        1: "two words"
    }
    with pytest.raises(Exception, match="without a contexts list"):
        read_contexts(["not", "an", "object"], 1, "m")


def test_one_passage_documents_cost_nothing() -> None:
    doc = LoadedDocument(key="k", title="Note", text="A short note.", loader="text")
    chunker = ContextualChunking()
    assert chunker._passages(OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1"), doc, chunker.chunk(doc)) == []
