"""`llm_verified` at ingest: a document's new names mapped onto the graph's entities as a model
confirms, through the replay server (no network). The judge answers by what the prompt holds, as in
`test_resolution`, so these tests hold whatever order the pairs are sent in."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.llm.conftest import KEY
from tests.llm.replay_server import ReplayServer, error_reply, rate_limited
from tests.llm.test_resolution import LAB, LAB_UK, MARTA, MARTA_TYPO, documents_naming, judge

from evigraph.errors import ConfigurationError
from evigraph.ingest.llm_resolution import LLMVerifiedResolution
from evigraph.kb import KnowledgeBase
from evigraph.models import IngestReport
from evigraph.providers.llms import OpenAICompatibleLLM
from evigraph.resolution_records import IngestResolution

FIRST = "Marta Oliveira founded Harbor Lab in Lisbon in 2014. She hired Ana Costa."
SECOND = "Marta Olivera visited the Harbour Lab in Lisbon. Ana Costa met Rui Pinto there."
THIRD = "Rui Pinto wrote to Marta Olivera about the budget."
SAME_MARTA = frozenset(("Marta Oliveira", "Marta Olivera"))


async def first_then_second(kb: KnowledgeBase) -> IngestReport:
    """The first document into an empty graph (nothing to resolve against), then the second's report."""
    first = await kb.ingest(text=FIRST, key="a", progress=False)
    assert first.ok and first.resolution is not None
    assert (first.resolution.candidates, first.resolution.sent, first.resolution.mappings) == (0, 0, [])
    return await kb.ingest(text=SECOND, key="b", progress=False)


def resolution_of(report: IngestReport) -> IngestResolution:
    assert report.resolution is not None and report.resolution.resolver == "llm_verified"
    return report.resolution


async def test_a_confirmed_new_name_lands_on_the_existing_entity(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm, resolver="llm_verified") as kb:
        report = await first_then_second(kb)
        assert report.ok
        r = resolution_of(report)
        assert (r.candidates, r.sent, r.judged, r.confirmed, r.rejected, r.unjudged) == (2, 2, 2, 1, 1, 0)
        assert (r.mapped, r.known, r.over_budget, r.unresolved, r.errors) == (1, 0, 0, [], [])
        assert [(m.name, m.entity, m.by) for m in r.mappings] == [("Marta Olivera", MARTA, "llm")]
        assert len(requests) == 1 and (r.llm_calls, r.input_tokens, r.output_tokens) == (1, 90, 9)
        assert report.llm is not None and report.llm.calls == 1  # in the ingest's own spend too
        # Mentions land on the existing entity, which keeps the new spelling as an alias; the pair
        # the model rejected stays two entities. Finalize has nothing left to merge for Marta.
        assert await documents_naming(kb, MARTA) == {"a", "b"}
        store = kb.store
        assert store is not None
        assert await store.entities_by_ids([MARTA_TYPO]) == []
        (marta,) = [e for e in await store.entity_records() if e.id == MARTA]
        assert "Marta Olivera" in marta.aliases
        assert await documents_naming(kb, LAB) == {"a"} and await documents_naming(kb, LAB_UK) == {"b"}

        # A later document naming the confirmed spelling maps by name: no call.
        third = await kb.ingest(text=THIRD, key="c", progress=False)
        r3 = resolution_of(third)
        assert (r3.known, r3.mapped, r3.sent) == (1, 1, 0) and len(requests) == 1
        assert [(m.name, m.by) for m in r3.mappings] == [("Marta Olivera", "name")]
        assert await documents_naming(kb, MARTA) == {"a", "b", "c"}

    prompt = requests[0].messages[-1]["content"]
    # The new name is shown with its own document's passage, not stored yet when the judge reads it.
    assert "Marta Olivera [Unknown]" in prompt and '"Marta Olivera visited the Harbour Lab' in prompt
    assert '"Marta Oliveira founded Harbor Lab' in prompt
    assert KEY not in caplog.text and KEY not in report.model_dump_json()


@pytest.mark.parametrize("budget", [1, 0])
async def test_the_pair_budget_leaves_the_rest_undecided(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM, budget: int
) -> None:
    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    resolver = LLMVerifiedResolution(max_llm_pairs=budget)
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm, resolver=resolver) as kb:
        r = resolution_of(await first_then_second(kb))
        assert (r.candidates, r.sent, r.over_budget, r.unjudged, r.max_llm_pairs) == (
            2,
            budget,
            2 - budget,
            2 - budget,
            budget,
        )
        assert len(requests) == budget
        assert f"over the budget of {budget} pairs" in r.line()
        if budget == 0:
            assert r.mapped == 0 and await documents_naming(kb, MARTA_TYPO) == {"b"}
        # Spent: the next document of the same knowledge base gets a budget of its own (per call).
        fourth = resolution_of(await kb.ingest(text="Ana Kosta met Rui Pinto in Lisbon.", key="d", progress=False))
        assert (fourth.new_names, fourth.candidates, fourth.sent) == (1, 1, budget)  # Ana Kosta ~ Ana Costa
        assert len(requests) == 2 * budget


@pytest.mark.parametrize(("budget", "embedded"), [(0, 1), (2, 2)])
async def test_new_names_are_embedded_for_resolution_only_while_pairs_can_be_sent(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM, budget: int, embedded: int
) -> None:
    from tests.ingest.test_name_vectors import RecordingEmbedder

    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    embedder = RecordingEmbedder()
    resolver = LLMVerifiedResolution(max_llm_pairs=budget)
    async with KnowledgeBase(
        tmp_path / "kb.db", extractor="rules", llm=llm, embedder=embedder, resolver=resolver
    ) as kb:
        r = resolution_of(await first_then_second(kb))
        assert r.sent == budget and len(requests) == (1 if budget else 0)
        # Once as the written entity's name vector; a second time only for the vector tier.
        assert embedder.texts.count("Rui Pinto") == embedded


async def test_names_blocking_misses_become_candidates_by_their_vectors(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    from tests.tools.conftest import HashEmbedder

    class OneMeaning(HashEmbedder):
        """Every name means the same: each new name's nearest entities all score 1.0."""

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0] + [0.0] * (self.dimension - 1) for _ in texts]

    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    async with KnowledgeBase(
        tmp_path / "kb.db", extractor="rules", llm=llm, embedder=OneMeaning(), resolver="llm_verified"
    ) as kb:
        r = resolution_of(await first_then_second(kb))
        # Rui Pinto shares no key with any name: only vectors make it a candidate, of 3 neighbours.
        assert r.by_vector >= 3 and r.candidates == 2 + r.by_vector and r.sent == r.candidates
        assert any("Rui Pinto" in q.messages[-1]["content"] for q in requests)
        assert [(m.name, m.entity) for m in r.mappings] == [("Marta Olivera", MARTA)]


@pytest.mark.parametrize(
    "replies",
    [
        [error_reply(500, "upstream exploded", type="server_error")] * 4,
        [rate_limited(0)] * 4,
    ],
    ids=["server-error", "rate-limited"],
)
async def test_an_llm_failure_ingests_the_document_unresolved_and_says_so(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM, replies: list[object]
) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm, resolver="llm_verified") as kb:
        assert (await kb.ingest(text=FIRST, key="a", progress=False)).ok
        replay_server.queue(*replies)  # type: ignore[arg-type]  # the first try and every retry
        report = await kb.ingest(text=SECOND, key="b", progress=False)
        assert report.ok and [d.status for d in report.documents] == ["created"]
        r = resolution_of(report)
        assert (r.sent, r.judged, r.unjudged, r.mapped, r.llm_calls, r.llm_failed_calls) == (2, 0, 2, 0, 1, 1)
        assert r.unresolved == ["b"] and len(r.errors) == 1
        assert "1 documents ingested unresolved" in r.line()
        assert await documents_naming(kb, MARTA_TYPO) == {"b"}  # written as extracted


async def test_pairs_the_token_ceiling_holds_back_are_no_llm_failure(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm, resolver="llm_verified") as kb:
        assert (await kb.ingest(text=FIRST, key="a", progress=False)).ok
        report = await kb.ingest(text=SECOND, key="b", progress=False, max_llm_tokens=50)  # one call needs ~130
        assert report.ok and requests == []
        r = resolution_of(report)
        assert (r.candidates, r.sent, r.held, r.unjudged, r.llm_failed_calls) == (2, 0, 2, 2, 0)
        assert (r.unresolved, r.errors) == ([], [])
        assert "2 held back by the LLM token ceiling" in r.line() and "unresolved" not in r.line()


async def test_a_rejected_key_stops_the_asking_not_the_ingest(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm, resolver="llm_verified") as kb:
        assert (await kb.ingest(text=FIRST, key="a", progress=False)).ok
        replay_server.queue(error_reply(401, "Incorrect API key provided", code="invalid_api_key"))
        texts = [(SECOND, "b"), ("Ana Kosta met Rui Pinto in Lisbon.", "b2")]
        from evigraph.ingest.text_documents import text_document

        report = await kb.ingest_documents([text_document(t, k, None) for t, k in texts], progress=False)
        assert report.ok and {d.status for d in report.documents} == {"created"}
        r = resolution_of(report)
        assert r.unresolved == ["b", "b2"] and r.mapped == 0 and replay_server.calls() == 1
        assert len(r.errors) == 1 and "key" in r.errors[0]


async def test_without_an_llm_the_error_names_the_fix(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb.db", extractor="rules", resolver="llm_verified")
    with pytest.raises(ConfigurationError) as caught:
        await kb.ingest(text=FIRST, key="a", progress=False)
    assert caught.value.message == "the llm_verified resolver needs an LLM"
    assert "--llm" in caught.value.hint and "KnowledgeBase(llm=" in caught.value.hint
    await kb.close()
    assert not (tmp_path / "kb.db").exists()  # refused before the file was made


async def test_bad_resolver_input_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown resolver 'llm_verifyed'") as caught:
        KnowledgeBase(resolver="llm_verifyed")
    assert "llm_verified" in caught.value.hint
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigurationError, match="max_llm_pairs must be a whole number"):
            LLMVerifiedResolution(max_llm_pairs=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="runs inside an ingest"):
        from evigraph.models import GraphData

        await LLMVerifiedResolution().resolve(GraphData())


async def test_the_ingest_tool_resolves_with_an_allowed_plan_within_the_operators_pairs(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    from evigraph import Toolkit

    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text(FIRST, encoding="utf-8")
    (root / "b.txt").write_text(SECOND, encoding="utf-8")
    plan = [{"match": "*", "resolver": "llm_verified"}]
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm) as kb:
        cheap = Toolkit(kb, files_root=root)  # the default limits: cheap resolvers only
        refused = (await cheap.call("ingest", {"files": ["a.txt"], "plan": plan})).model_dump()
        assert "resolver 'llm_verified' is not allowed" in refused["documents"][0]["plan_reason"]
        assert refused["resolution"] is None and requests == []

        limits = {"resolvers": ["exact", "llm_verified"], "max_llm_pairs": 1}
        tk = Toolkit(kb, files_root=root, plan_limits=limits)
        spec = next(s for s in tk.tool_specs() if s.name == "ingest")
        assert "llm_verified" in spec.description and "at most 1 candidate pairs per ingest call" in spec.description
        result = await tk.call("ingest", {"files": ["b.txt"], "plan": plan})
        dumped = result.model_dump()
        assert dumped["documents"][0]["status"] == "ingested"
        assert dumped["documents"][0]["plan"]["resolver"] == "llm_verified"
        r = dumped["resolution"]
        assert (r["sent"], r["over_budget"], r["max_llm_pairs"]) == (1, 1, 1) and len(requests) == 1
        assert "resolved with llm_verified" in result.to_llm_text()


async def test_a_negative_pair_budget_is_refused_by_every_entry_before_any_call(
    tmp_path: Path, replay_server: ReplayServer, llm: OpenAICompatibleLLM
) -> None:
    from evigraph import Toolkit
    from evigraph.ingest.text_documents import text_document

    requests, replay_server.answer = judge({SAME_MARTA})  # type: ignore[assignment]
    (tmp_path / "b.txt").write_text(SECOND, encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", llm=llm, resolver="llm_verified") as kb:
        assert (await kb.ingest(text=FIRST, key="a", progress=False)).ok
        with pytest.raises(ConfigurationError, match="max_llm_pairs must be a whole number") as caught:
            await kb.ingest_documents([text_document(SECOND, "b", None)], progress=False, max_llm_pairs=-1)
        assert "0 sends none" in caught.value.hint
        with pytest.raises(ConfigurationError, match="max_llm_pairs must be a whole number"):
            await kb.ingest_files([tmp_path / "b.txt"], max_llm_pairs=-1)
        with pytest.raises(ConfigurationError, match="max_llm_pairs must be a whole number"):
            Toolkit(kb, plan_limits={"max_llm_pairs": -1})
        assert requests == [] and await documents_naming(kb, MARTA_TYPO) == set()
        # 0 is a budget like any other, at every entry: nothing is sent.
        zero = Toolkit(kb, files_root=tmp_path, plan_limits={"resolvers": ["llm_verified"], "max_llm_pairs": 0})
        plan = [{"match": "*", "resolver": "llm_verified"}]
        r = (await zero.call("ingest", {"files": ["b.txt"], "plan": plan})).model_dump()["resolution"]
        assert (r["sent"], r["over_budget"], r["max_llm_pairs"]) == (0, 2, 0) and requests == []


def test_reports_of_several_plans_add_every_count() -> None:
    counts = [n for n, info in IngestResolution.model_fields.items() if info.annotation is int]
    one = IngestResolution(resolver="llm_verified", max_llm_pairs=3, **dict.fromkeys(counts, 1))
    both = one.add(IngestResolution(resolver="llm_verified", **dict.fromkeys(counts, 2)))
    assert {n: getattr(both, n) for n in counts} == dict.fromkeys(counts, 3)
    assert {"sent", "held", "over_budget", "llm_calls", "input_tokens"} <= set(counts) and both.max_llm_pairs == 3


def test_the_cli_ingest_takes_the_resolver(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(FIRST, encoding="utf-8")
    db = str(tmp_path / "kb.db")
    assert run_cli("ingest", str(docs), "--db", db, "--extractor", "rules", "--embedder", "none", "-q").code == 0
    (docs / "b.txt").write_text(SECOND, encoding="utf-8")
    requests, answer = judge({SAME_MARTA})
    with ReplayServer(answer=answer) as server:  # type: ignore[arg-type]
        env = {"EVIGRAPH_LLM_BASE_URL": server.url, "EVIGRAPH_LLM_MODEL": "test-model", "EVIGRAPH_LLM_API_KEY": KEY}
        flags = ("--db", db, "--extractor", "rules", "--embedder", "none", "--resolver", "llm_verified")
        shown = run_cli("ingest", str(docs), *flags, env=env)
        assert shown.code == 0, shown.err
        assert "resolved with llm_verified: " in shown.err and "1 mapped onto existing entities" in shown.err
        assert len(requests) == 1
    fresh = ("--db", str(tmp_path / "offline.db"), *flags[2:])  # no LLM recorded in it either
    offline = run_cli("ingest", str(docs), *fresh)
    assert offline.code != 0 and "the llm_verified resolver needs an LLM" in offline.err
    assert not (tmp_path / "offline.db").exists()
    assert KEY not in shown.out + shown.err
