"""Renaming document keys in the store contract: everything that names a key follows it, passage
ids and vectors stay, and a collision refuses the whole rename."""

from __future__ import annotations

import pytest
from tests.store.contract.conftest import ALPHA, BETA, covers, version
from tests.store.contract.test_contract_decisions import decision, passage

from evigraph.errors import InputError
from evigraph.models import SourceRecord, SourceState
from evigraph.store import GraphStore
from evigraph.trace_records import NewStep

NEW = "file:team/alpha.md"


@covers("rename_documents")
async def test_a_renamed_document_keeps_its_passages_log_and_supports(store: GraphStore) -> None:
    await store.write_versions([ALPHA, BETA])
    await store.log_sources([SourceRecord(key=ALPHA.key, state=SourceState.current, content_hash="h", version=1)])
    await store.create_task("p", "ann", "t", "choose")
    support = await passage(store, ALPHA.key)
    made = await store.record_decision("p", "ann", decision(support))
    await store.set_step("p", "ann", "t", NewStep(name="read", state="completed", supports=(support,)))
    ids = [c.id for c in await store.document_passages(ALPHA.key)]

    assert await store.rename_documents({ALPHA.key: NEW, "missing": "file:other"}) == [ALPHA.key]

    assert ALPHA.key not in await store.get_documents([ALPHA.key])
    moved = (await store.get_documents([NEW]))[NEW]
    assert (moved.version, moved.chunks, moved.title) == (1, 2, "Alpha")
    assert [c.id for c in await store.document_passages(NEW)] == ids
    assert {h.document for h in await store.search_passages("Babbage")} == {NEW}
    assert (await store.source_log([NEW]))[NEW].state == SourceState.current
    assert await store.source_log([ALPHA.key]) == {}
    [found] = await store.get_decisions("p", [made.id])
    assert (found.state, [s.document for s in found.supports]) == ("active", [NEW])
    [step] = await store.list_steps("p", "t", "completed")
    assert [s.document for s in step.supports] == [NEW]
    # a document written later under the old key numbers past the renamed one's passages
    [again] = await store.write_versions([ALPHA])
    assert again.version == 2
    assert not set(ids) & {c.id for c in await store.document_passages(ALPHA.key)}
    # the renamed document still takes new versions, flagging what rests on its old one
    [next_version] = await store.write_versions([version(NEW, ["Ada left."], [[]])])
    assert next_version.version == 2
    [flagged] = await store.get_decisions("p", [made.id])
    assert flagged.state == "needs_review" and flagged.review[0].document == NEW


@covers("rename_documents")
async def test_a_rename_onto_a_stored_key_changes_nothing(store: GraphStore) -> None:
    await store.write_versions([ALPHA, BETA])
    with pytest.raises(InputError, match="already another document's") as refused:
        await store.rename_documents({ALPHA.key: BETA.key})
    assert "delete_document" in (refused.value.hint or "")
    with pytest.raises(InputError, match="both be renamed"):
        await store.rename_documents({ALPHA.key: "file:a", BETA.key: "file:a"})
    assert set(await store.get_documents([ALPHA.key, BETA.key])) == {ALPHA.key, BETA.key}
    assert await store.rename_documents({}) == []


@covers("rename_documents")
async def test_a_rename_rewrites_review_causes_written_before_it(store: GraphStore) -> None:
    await store.write_versions([ALPHA])
    await store.create_task("p", "ann", "t", "choose")
    made = await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key)))
    await store.write_versions([version(ALPHA.key, ["Ada left."], [[]])])  # flags the decision first
    [flagged] = await store.get_decisions("p", [made.id])
    assert flagged.state == "needs_review" and flagged.review[0].document == ALPHA.key

    assert await store.rename_documents({ALPHA.key: NEW}) == [ALPHA.key]

    [renamed] = await store.get_decisions("p", [made.id])
    assert renamed.state == "needs_review" and [c.document for c in renamed.review] == [NEW]


@covers("rename_documents")
async def test_a_rename_onto_a_key_only_the_source_log_holds_is_refused(store: GraphStore) -> None:
    await store.write_versions([ALPHA])
    await store.log_sources([SourceRecord(key=NEW, state=SourceState.failed, error="unreadable")])
    with pytest.raises(InputError, match="already another document's"):
        await store.rename_documents({ALPHA.key: NEW})
    assert set(await store.get_documents([ALPHA.key, NEW])) == {ALPHA.key}
    assert (await store.source_log([NEW]))[NEW].state == SourceState.failed


@covers("holds_legacy_keys")
async def test_legacy_keys_are_found_in_documents_and_the_source_log(store: GraphStore) -> None:
    await store.write_versions([ALPHA])
    assert not await store.holds_legacy_keys()
    await store.log_sources([SourceRecord(key="file:C:/docs/a.md", state=SourceState.failed, error="gone")])
    assert await store.holds_legacy_keys()
    await store.rename_documents({"file:C:/docs/a.md": "file:docs/a.md", ALPHA.key: "file:/home/ann/alpha.md"})
    assert await store.holds_legacy_keys()  # the document's key is absolute now
