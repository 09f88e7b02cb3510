"""The extraction cache of the store contract: results kept by key, across sessions."""

from __future__ import annotations

from tests.store.contract.conftest import StoreFactory, covers

from evigraph.store import GraphStore


@covers("cached_extractions", "cache_extractions")
async def test_extractions_are_kept_by_key_and_overwritten(factory: StoreFactory, location: str) -> None:
    async with factory.connect(location) as store:
        assert await store.cached_extractions(["a", "b"]) == {}
        assert await store.cached_extractions([]) == {}
        await store.cache_extractions({})
        await store.cache_extractions({"a": '{"e":[],"r":[]}', "b": '{"e":[["Ada","Person"]],"r":[]}'})
        await store.cache_extractions({"a": '{"e":[["Ann","Person"]],"r":[]}'})
    async with factory.connect(location) as again:
        found = await again.cached_extractions(["a", "b", "missing", "a"])
        assert found == {"a": '{"e":[["Ann","Person"]],"r":[]}', "b": '{"e":[["Ada","Person"]],"r":[]}'}


async def test_the_cache_is_no_part_of_the_graph(store: GraphStore) -> None:
    await store.cache_extractions({"k": "{}"})
    assert (await store.counts()).documents == 0
    assert "ExtractionCache" not in {t.name for t in await store.schema_tables()}


@covers("cached_extractions", "cache_extractions")
async def test_each_kind_keeps_its_own_results(store: GraphStore) -> None:
    await store.cache_extractions({"k": "extracted"})
    await store.cache_extractions({"k": "a context", "j": "another"}, kind="context")
    assert await store.cached_extractions(["k", "j"]) == {"k": "extracted"}
    assert await store.cached_extractions(["k", "j"], kind="context") == {"k": "a context", "j": "another"}
    assert await store.cached_extractions(["k"], kind="other") == {}
