"""The write generation and the saved-index folder of the store contract.

Retrieval's saved indexes are only as trustworthy as the label they are saved under: every write
that changes what retrieval derives must move `write_generation`, a read must not, and a scoped
view (whose reads differ from the whole knowledge base's) must neither label nor save anything.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.store.contract.conftest import StoreFactory, covers, version

ONE = version("doc/one", ["Ada Lovelace wrote notes on the Analytical Engine."], [[("Ada Lovelace", "Person")]])
TWO = version("doc/two", ["Charles Babbage designed the Difference Engine."], [[("Charles Babbage", "Person")]])


@covers("write_generation", "saved_index_files")
async def test_writes_move_the_generation_and_reads_do_not(factory: StoreFactory, location: str) -> None:
    async with factory.connect(location) as store:
        if factory.scope is not None:  # a scoped view labels nothing and keeps no indexes
            assert await store.write_generation() is None and store.saved_index_files() is None
            return
        before = await store.write_generation()
        await store.write_versions([ONE])
        after_write = await store.write_generation()
        assert after_write is not None and after_write != before
        await store.search_passages("Lovelace", limit=5)
        await store.counts()
        assert await store.write_generation() == after_write  # reads leave it alone
        await store.delete_document("doc/one")
        after_delete = await store.write_generation()
        assert after_delete not in (after_write, before)  # a delete is a write too
        assert store.saved_index_files() is not None
    async with factory.connect(location) as again:  # and it is kept across opens
        assert await again.write_generation() == after_delete
        await again.write_versions([TWO])
        assert await again.write_generation() != after_delete


@covers("write_generation")
async def test_two_knowledge_bases_written_alike_never_share_a_generation(
    factory: StoreFactory, location: str, tmp_path: Path, empty_db: Path
) -> None:
    """The label names the data, not a count: a copy of one knowledge base's saved indexes must
    never pass for another's, however alike their histories."""
    folder = tmp_path / "other"
    folder.mkdir()
    other = await asyncio.to_thread(factory.fresh, folder, empty_db)  # FalkorDB's runs its own loop
    labels = []
    for where in (location, other):
        async with factory.connect(where) as store:
            await store.write_versions([ONE])
            labels.append(await store.write_generation())
    if factory.scope is not None:
        assert labels == [None, None]
    else:
        assert None not in labels and labels[0] != labels[1]


@covers("save_indexes")
async def test_save_indexes_tells_each_index_and_saves_it_at_the_generation(
    factory: StoreFactory, location: str
) -> None:
    told: list[tuple[str, int, int]] = []

    def progress(name: str, done: int, total: int) -> None:
        told.append((name, done, total))

    async with factory.connect(location) as store:
        await store.save_indexes(progress)
        assert told == []  # nothing written since the open: nothing to save
        await store.write_versions([ONE])
        await store.save_indexes(progress)
        generation = await store.write_generation()
        files = store.saved_index_files()
    assert told and told[-1][1] == told[-1][2] and [done for _, done, _ in told] == list(range(len(told)))
    names = {name for name, done, total in told if done < total}
    assert {"passages_bm25", "entities_bm25", "names", "graph", "terms"} <= names
    if factory.scope is not None:  # the whole knowledge base's are saved; the view keeps none itself
        assert files is None and generation is None
        return
    assert files is not None and generation is not None
    for name in names - {"terms"}:  # terms are saved under a name that says whether passages have context
        assert files.load(name, generation) is not None, name


@covers("write_generation", "write_properties", "add_property_columns")
async def test_property_values_leave_the_generation_alone(factory: StoreFactory, location: str) -> None:
    """No saved index derives from declared property values, so writing them (or declaring a
    column that exists) must not make every saved index stale."""
    from evigraph.property_types import PropertyKind, PropertyOwner

    async with factory.connect(location) as store:
        if factory.scope is not None:
            return
        await store.write_versions([ONE])
        await store.add_property_columns("entity", {"papers": PropertyKind.integer})
        [ada] = [r.id for r in await store.entity_records()]
        before = await store.write_generation()
        await store.add_property_columns("entity", {"papers": PropertyKind.integer})
        assert await store.write_properties([(PropertyOwner(owner="entity", id=ada), {"papers": 1})], "agent") == []
        assert await store.write_generation() == before
        held = await store.read_properties([PropertyOwner(owner="entity", id=ada)], ["papers"])
        assert held[ada].values == {"papers": 1}
