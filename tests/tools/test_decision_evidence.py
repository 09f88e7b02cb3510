"""A decision rests on the text the agent read, on both stores, through the real toolkit: evidence
read before its document was deleted and ingested again with other text is refused, whether the
new version got a new number (as every version does now) or the number the deleted one had (as a
delete by an earlier release left it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.errors import StaleEvidenceError
from evigraph.store import GraphStore, connect
from evigraph.store.embedded.schema import VERSION_SEQ
from evigraph.store.embedded.store import EmbeddedStore
from evigraph.store.falkordb.store import FalkorStore

SAFE = "Valve P-100 is SAFE to open at full pressure. The check was signed by the plant engineer."
UNSAFE = "Valve P-100 is NOT SAFE to open at full pressure. The check was signed by the plant engineer."
KEY = "valves/p-100"


@pytest.fixture
async def store(location: str) -> AsyncIterator[GraphStore]:
    async with connect(location) as opened:
        yield opened


@pytest.fixture
async def tk(location: str, store: GraphStore) -> AsyncIterator[Toolkit]:
    async with KnowledgeBase(location, store=store, extractor="rules") as kb:
        toolkit = Toolkit(kb, project="plant", agent="analyst")
        await toolkit.call("ingest", {"text": SAFE, "document_key": KEY, "title": "Valve P-100"})
        await toolkit.call("create_task", {"task_name": "valves", "goal": "May P-100 be opened?"})
        yield toolkit


async def read_whole(tk: Toolkit) -> tuple[int, str]:
    """(n, evidence id) of the valve's passage, found by a search and read whole, as an agent does."""
    hits = (await tk.call("search_passages", {"query": "Valve P-100", "mode": "lexical"})).model_dump()["hits"]
    [n] = [h["n"] for h in hits if h["source"]["document_key"] == KEY]
    [read] = (await tk.call("read_passages", {"passages": [n]})).model_dump()["passages"]
    assert not read["partial"]
    return n, read["evidence_id"]


def decision(n: int | str, **extra: Any) -> dict[str, Any]:
    return {
        "task_name": "valves",
        "choice_key": "p-100",
        "conclusion": "P-100 may be opened at full pressure",
        "rationale": "The signed check says it is safe.",
        "supports": [{"kind": "passage", "evidence": n}],
        **extra,
    }


async def ingest_again(tk: Toolkit, text: str) -> None:
    await tk.call("ingest", {"text": text, "document_key": KEY, "title": "Valve P-100"})


async def refused(tk: Toolkit, tool: str, args: dict[str, Any], match: str) -> None:
    with pytest.raises(ToolError, match=match) as info:
        await tk.call(tool, args)
    assert isinstance(info.value.__cause__, StaleEvidenceError)
    assert "read_passages" in info.value.hint


async def forget_version_numbers(store: GraphStore) -> None:
    """What a delete by an earlier release left: no record of the numbers the key was given."""
    forget = f"MATCH (s:{VERSION_SEQ}) DELETE s"
    if isinstance(store, EmbeddedStore):
        await store.executor.write(lambda tx: tx.execute(forget).close())
    else:
        assert isinstance(store, FalkorStore)
        store.conn.write_sync(forget)


async def test_evidence_read_before_a_delete_does_not_support_a_decision_on_the_text_ingested_after(
    tk: Toolkit,
) -> None:
    n, evidence_id = await read_whole(tk)
    await tk.call("delete_document", {"document_key": KEY})
    await ingest_again(tk, UNSAFE)
    assert (await tk.kb.source_status(KEY)).version == 2  # the deleted version's number is not given again

    await refused(tk, "record_decision", decision(n), "no current passage")
    await refused(tk, "record_decision", decision(evidence_id), "no current passage")
    assert (await tk.call("list_decisions", {"task_name": "valves"})).model_dump()["decisions"] == []
    current, _ = await read_whole(tk)  # what the agent reads now can support it
    made = (await tk.call("record_decision", decision(current))).model_dump()["decision"]
    assert made["supports"][0]["version"] == 2


async def test_a_reused_version_number_cannot_pass_other_text_for_what_was_read(tk: Toolkit, store: GraphStore) -> None:
    n, evidence_id = await read_whole(tk)
    first = (await tk.call("record_decision", decision(n))).model_dump()["decision"]
    await tk.call("delete_document", {"document_key": KEY})
    await forget_version_numbers(store)
    await ingest_again(tk, UNSAFE)
    assert (await tk.kb.source_status(KEY)).version == 1  # the same number, so the same passage id
    [now] = (await tk.kb.read_passages([evidence_id.removeprefix("passage:")])).passages
    assert "NOT SAFE" in now.text

    stale = "does not read as it did"
    await refused(tk, "record_decision", decision(n, choice_key="p-100-again"), stale)
    await refused(tk, "reaffirm_decision", {"decision_id": first["id"], "evidence_ids": [n]}, stale)
    superseding = {k: v for k, v in decision(n).items() if k not in ("task_name", "choice_key")}
    await refused(
        tk, "supersede_decision", {**superseding, "decision_id": first["id"], "explanation": "re-checked"}, stale
    )
    assert (await tk.call("get_decision", {"decision_id": first["id"]})).model_dump()["decision"]["state"] == (
        "needs_review"
    )

    await read_whole(tk)  # read again: the agent has now seen the text a decision would rest on
    replaced = {**superseding, "conclusion": "P-100 must stay closed", "rationale": "The check says it is not safe."}
    again = await tk.call("supersede_decision", {**replaced, "decision_id": first["id"], "explanation": "re-read"})
    assert again.model_dump()["decision"]["state"] == "active"
