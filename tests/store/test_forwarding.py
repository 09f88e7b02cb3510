"""`ForwardingStore` forwards every contract method to the store it wraps, made from the contract
itself, so a method added to `GraphStore` reaches a wrapper's inner store without a hand-kept list."""

from __future__ import annotations

import inspect
from pathlib import Path

from evigraph import KnowledgeBase
from evigraph.store import connect
from evigraph.store.base import GraphStore
from evigraph.store.forwarding import PASSED_THROUGH, ForwardingStore


def test_every_contract_method_is_forwarded_and_nothing_is_left_abstract() -> None:
    made = {name for name, value in vars(ForwardingStore).items() if inspect.isfunction(value) and name != "__init__"}
    assert made == {*GraphStore.__abstractmethods__, *PASSED_THROUGH}
    assert not ForwardingStore.__abstractmethods__
    assert ForwardingStore.counts.__doc__ == GraphStore.counts.__doc__  # the contract's words, for help()


async def test_calls_reach_the_wrapped_store_and_their_answers_come_back(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text="Ada Quillfeather founded Quillworks in Lisbon.", key="quill")
    inner = connect(db)
    await inner.open()
    try:
        store = ForwardingStore(inner)
        assert (store.read_only, store.write_group_passages) == (inner.read_only, inner.write_group_passages)
        assert await store.counts() == await inner.counts()
        assert [d.key for d in await store.list_documents(10, 0)] == ["quill"]
        await store.set_setting("forwarded", "yes")  # a write, too, lands in the wrapped store
        assert await inner.get_setting("forwarded") == "yes"
        assert await store.holds_documents()
        # Not forwarded: a view's reads may differ from the store's, so it saves no derived indexes.
        assert inner.saved_index_files() is not None
        assert store.saved_index_files() is None
    finally:
        await inner.close()


async def test_a_scope_hiding_every_document_still_answers_for_the_whole_knowledge_base(tmp_path: Path) -> None:
    """`holds_documents` is passed through, not the base's default (which counts what the view
    shows): a scope that hides everything must not make a shared graph look empty."""
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text="Ada Quillfeather founded Quillworks in Lisbon.", key="quill")
    store = connect(db, scope=["elsewhere/*"])
    await store.open()
    try:
        assert (await store.counts()).documents == 0
        assert await store.holds_documents()
    finally:
        await store.close()
