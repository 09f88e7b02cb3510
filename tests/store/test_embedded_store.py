"""The embedded GraphStore on a real Kuzu file: versions, search, neighbours, engines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.conftest import engine_module
from tests.store.contract.conftest import version

from evigraph.errors import EngineUnavailableError, ReadOnlyQueryError, StoreError
from evigraph.extras import install_hint
from evigraph.store.embedded.store import EmbeddedStore


async def test_versions_numbers_and_search(tmp_path: Path) -> None:
    async with EmbeddedStore(tmp_path / "kb.db") as store:
        [a] = await store.write_versions(
            [
                version(
                    "a", ["Alice met Bob in Paris."], [[("Alice", "Person"), ("Bob", "Person"), ("Paris", "Location")]]
                )
            ]
        )
        assert a.version == 1
        [a2] = await store.write_versions(
            [version("a", ["Alice moved to Rome."], [[("Alice", "Person"), ("Rome", "Location")]])]
        )
        assert a2.version == 2
        hits = await store.search_passages("Rome", limit=5)
        assert [h.text for h in hits] == ["Alice moved to Rome."]
        assert hits[0].document == "a" and hits[0].title == "A" and hits[0].score > 0
        assert await store.search_passages("Paris") == []  # the old version is gone from the index
        assert await store.search_passages('"(:)"') == []  # query syntax characters are not operators
        counts = await store.counts()
        assert (counts.documents, counts.chunks, counts.entities, counts.relations) == (1, 1, 2, 1)


async def test_neighbours_walk_hops_in_order(tmp_path: Path) -> None:
    doc = version(
        "chain",
        ["Ann knows Ben.", "Ben knows Cid.", "Cid knows Dee."],
        [
            [("Ann", "Person"), ("Ben", "Person")],
            [("Ben", "Person"), ("Cid", "Person")],
            [("Cid", "Person"), ("Dee", "Person")],
        ],
    )
    async with EmbeddedStore(tmp_path / "kb.db") as store:
        await store.write_versions([doc])
        one = await store.neighbours(["person:ann"], hops=1)
        assert [(n.source_name, n.target_name, n.hop) for n in one] == [("Ann", "Ben", 1)]
        three = await store.neighbours(["person:ann"], hops=3)
        assert [(n.source_name, n.target_name, n.hop) for n in three] == [
            ("Ann", "Ben", 1),
            ("Ben", "Cid", 2),
            ("Cid", "Dee", 3),
        ]
        reverse = await store.neighbours(["person:dee"], hops=1)
        assert [(n.source_name, n.target_name) for n in reverse] == [("Cid", "Dee")]  # direction is kept
        assert len(await store.neighbours(["person:ann"], hops=3, limit=2)) == 2


async def test_failed_batch_writes_nothing(tmp_path: Path) -> None:
    async with EmbeddedStore(tmp_path / "kb.db") as store:
        doc = version("a", ["Alice met Bob."], [[("Alice", "Person"), ("Bob", "Person")]])
        with pytest.raises(ValueError, match="two versions"):
            await store.write_versions([doc, doc])
        assert (await store.counts()).documents == 0


async def test_reads_refuse_writes_even_inside_procedures(tmp_path: Path) -> None:
    async with EmbeddedStore(tmp_path / "kb.db") as store:
        await store.write_versions([version("a", ["Alice met Bob."], [[("Alice", "Person"), ("Bob", "Person")]])])
        for cypher in (
            "CREATE (:Entity {id: 'x'})",
            "MATCH (e:Entity) SET e.name = 'x'",
            "MATCH (e:Entity) DETACH DELETE e",
            "MERGE (:Entity {id: 'y'})",
        ):
            with pytest.raises(ReadOnlyQueryError):
                await store.cypher_query(cypher)
        assert (await store.counts()).entities == 2
        rows = await store.cypher_query("MATCH (e:Entity) RETURN e.name AS name ORDER BY name", limit=1)
        assert rows == [{"name": "Alice"}]


async def test_read_only_store_on_existing_file(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with EmbeddedStore(db) as store:
        await store.write_versions([version("a", ["Alice met Bob."], [[("Alice", "Person"), ("Bob", "Person")]])])
    async with EmbeddedStore(db, read_only=True) as ro:
        assert (await ro.counts()).documents == 1
        with pytest.raises(StoreError, match="read-only"):
            await ro.delete_document("a")


@pytest.mark.parametrize(
    ("engine", "title", "extra"), [("ladybug", "LadybugDB", ""), ("kuzu", "Kuzu", "kuzu")], ids=["ladybug", "kuzu"]
)
async def test_an_engine_missing_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, title: str, extra: str
) -> None:
    """LadybugDB is a base dependency, so its hint reinstalls evigraph; Kuzu is the `kuzu` extra."""
    monkeypatch.setitem(sys.modules, engine, None)  # not installed: importing it fails
    with pytest.raises(EngineUnavailableError, match=f"{title} is not installed") as info:
        async with EmbeddedStore(tmp_path / "kb.db", engine=engine):
            pass
    assert info.value.hint == install_hint(extra)
    assert not (tmp_path / "kb.db").exists()


async def test_unknown_engine_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailableError, match="unknown engine"):
        async with EmbeddedStore(tmp_path / "kb.db", engine="postgres"):
            pass


async def test_alias_variants_update_an_entity_and_stay_searchable(tmp_path: Path) -> None:
    async with EmbeddedStore(tmp_path / "kb.db") as store:
        await store.write_versions([version("a", ["The Vetra River floods."], [[("The Vetra River", "Location")]])])
        await store.write_versions([version("b", ["Vetra River trout."], [[("Vetra River", "Location")]])])
        [row] = await store.cypher_query("MATCH (e:Entity) RETURN e.aliases AS aliases")
        assert set(row["aliases"]) == {"The Vetra River", "Vetra River"}
        assert [e.name for e in await store.search_entities("vetra")] == ["The Vetra River"]
        assert await store.entities_named(["vetra river"]) == {"vetra river": ["location:vetra river"]}


async def test_passages_carry_their_document_title_without_a_join(tmp_path: Path) -> None:
    """Passage reads take titles from the store's cached map; a map built before a document was
    written (a read racing a write) still gives that document's passages their title and path."""
    from evigraph.store.embedded import reads

    async with EmbeddedStore(tmp_path / "kb.db") as store:
        await store.write_versions([version("a", ["Alice met Bob."], [[("Alice", "Person")]])])
        [hit] = await store.search_passages("Alice")
        assert (hit.document, hit.title) == ("a", "A")
        await store.write_versions([version("b", ["Carol met Dan."], [[("Carol", "Person")]])])
        [fresh] = await store.search_passages("Carol")  # the write dropped the map; it is rebuilt
        assert (fresh.document, fresh.title) == ("b", "B")
        stale: reads.Titles = {"a": ("A", None)}  # as built before "b" was written
        [late] = await store.executor.read(lambda tx: reads.passages_by_ids(tx, [fresh.id], stale))
        assert (late.document, late.title, late.path) == ("b", "B", fresh.path)


async def test_a_file_is_opened_by_the_engine_that_wrote_it(tmp_path: Path) -> None:
    """Neither engine opens the other's files, and one process cannot load both: the file's first
    bytes choose the engine, a contradicting option is refused, and so is loading the second engine
    (its import would fail, or crash the process at exit)."""
    from evigraph.store.embedded.engine import engine_name, file_engine

    loaded = engine_name(engine_module())  # this test process runs the default engine
    other = "kuzu" if loaded == "ladybug" else "ladybug"
    titles, magic = {"kuzu": "Kuzu", "ladybug": "LadybugDB"}, {"kuzu": b"KUZU", "ladybug": b"LBUG"}

    db = tmp_path / "mine.db"
    async with EmbeddedStore(db) as store:
        await store.write_versions([version("a", ["The Vetra River floods."], [[("Vetra River", "Location")]])])
    assert file_engine(db) == loaded
    refused = f"was written by {titles[loaded]}, which {titles[other]} cannot open"
    with pytest.raises(EngineUnavailableError, match=refused) as info:
        async with EmbeddedStore(db, engine=other):
            pass
    assert f"engine={loaded!r}" in info.value.hint
    async with EmbeddedStore(db, read_only=True) as store:  # auto: the file's own engine
        assert (await store.counts()).documents == 1

    theirs = tmp_path / "theirs.db"
    theirs.write_bytes(magic[other] + bytes(4092))  # the other engine's first page, as far as auto reads
    beside = f"has {titles[loaded]} loaded, and {titles[other]} cannot be loaded"
    for engine in ("auto", other):
        with pytest.raises(EngineUnavailableError, match=beside) as info:
            async with EmbeddedStore(theirs, engine=engine, read_only=True):
                pass
        assert "another process" in info.value.hint
    with pytest.raises(EngineUnavailableError, match="cannot be loaded beside it"):
        async with EmbeddedStore(tmp_path / "new.db", engine=other):
            pass
    assert not (tmp_path / "new.db").exists()
    assert file_engine(tmp_path / "missing.db") is None and file_engine(tmp_path) is None


def test_an_engine_that_is_found_but_does_not_import_says_so(tmp_path: Path) -> None:
    """A broken install (a wheel for another platform, a missing shared library) is found by the
    import system but fails to import: the store says which engine and how to reinstall it."""
    import subprocess

    broken = tmp_path / "site" / "kuzu"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libkuzu.so: cannot open shared object file')\n")
    child = f"""
import asyncio, sys
sys.path.insert(0, {str(tmp_path / "site")!r})
from evigraph.errors import EngineUnavailableError
from evigraph.store.embedded.store import EmbeddedStore
async def main():
    try:
        async with EmbeddedStore({str(tmp_path / "kb.db")!r}, engine="kuzu"):
            pass
    except EngineUnavailableError as exc:
        print(exc.message, "|", exc.hint)
asyncio.run(main())
"""
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"Kuzu did not import: libkuzu.so: cannot open shared object file | {install_hint('kuzu')}" in proc.stdout
    assert not (tmp_path / "kb.db").exists()
