"""The embedded store's reopen before a large save, on whichever engine the contract runs on.

A save of a large file closes the engine and opens it again first (`EmbeddedStore._drop_page_cache`),
so its pool holds none of the pages the writes before it left there. Both engines must come out of
it the same store: writable, answering what was written before and after, and the file whole for the
next open. The size the reopen waits for is set to nothing here, so the contract's small file has one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.contract.conftest import TEST_ENGINE, covers, version

from evigraph.store.embedded import index_ops
from evigraph.store.embedded.store import EmbeddedStore

ONE = version("doc/one", ["Ada Lovelace wrote notes on the Analytical Engine."], [[("Ada Lovelace", "Person")]])
TWO = version("doc/two", ["Charles Babbage designed the Difference Engine."], [[("Charles Babbage", "Person")]])


@covers("save_indexes")
async def test_a_save_that_reopens_the_engine_leaves_the_store_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kb.db"
    monkeypatch.setattr(index_ops, "DROP_PAGE_CACHE_MB", 0)
    async with EmbeddedStore(path, engine=TEST_ENGINE or "auto") as store:
        await store.write_versions([ONE])
        engine = store.executor._db
        await store.save_indexes()
        assert store.executor._db is not engine  # reopened
        assert [h.document for h in await store.search_passages("Lovelace", 5)] == ["doc/one"]
        await store.write_versions([TWO])  # still writable
        assert set(await store.get_documents(["doc/one", "doc/two"])) == {"doc/one", "doc/two"}
        assert [e.name for e in await store.search_entities("Babbage", 5)] == ["Charles Babbage"]
    async with EmbeddedStore(path, read_only=True) as again:
        assert set(await again.get_documents(["doc/one", "doc/two"])) == {"doc/one", "doc/two"}
        assert [h.document for h in await again.search_passages("Babbage", 5)] == ["doc/two"]
