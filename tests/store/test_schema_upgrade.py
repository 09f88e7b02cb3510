"""A knowledge base written before graph ranking opens, reads and gets its columns on a writable open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import engine_connection
from tests.store.contract.conftest import ALPHA
from tests.store.contract.test_contract_code import DELAY, write_shop

from evigraph.errors import StoreError
from evigraph.property_types import SOURCES_COLUMN
from evigraph.store import connect
from evigraph.store.embedded.engine import engine_name
from evigraph.store.embedded.schema import (
    ADDED_COLUMNS,
    RETIRED_FTS_INDEXES,
    RETYPED_COLUMNS,
    VERSION_SEQ,
)
from evigraph.trace_records import NewStep


def _drop_ranking_columns(path: Path) -> None:
    _alter(path, *(f"ALTER TABLE {table} DROP {column}" for table, column, _ in ADDED_COLUMNS))


def _alter(path: Path, *statements: str) -> None:
    """Run `statements` on the file with its own engine, as an earlier release left it."""
    conn = engine_connection(path)
    for statement in statements:
        conn.execute(statement)
    conn.close()
    conn.database.close()


def _first_column(path: Path, queries: list[str]) -> list[list[Any]]:
    """The first column of each query's rows, read from the file opened read-only."""
    conn = engine_connection(path, read_only=True)
    if engine_name(conn) == "kuzu":  # a file of Kuzu's with full-text indexes reads with it loaded
        conn.execute("LOAD EXTENSION fts")
    out = []
    for query in queries:
        result = conn.execute(query)
        out.append([])
        while result.has_next():
            out[-1].append(result.get_next()[0])
    conn.close()
    conn.database.close()
    return out


def _columns(path: Path) -> set[tuple[str, str]]:
    tables = sorted({t for t, _, _ in ADDED_COLUMNS})
    names = _first_column(path, [f"CALL TABLE_INFO('{table}') RETURN name" for table in tables])
    return {(table, name) for table, found in zip(tables, names, strict=True) for name in found}


async def test_old_file_reads_read_only_and_upgrades_on_a_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
        await store.create_task("p", "ann", "t", "g")
        await store.set_step("p", "ann", "t", NewStep(name="s", state="in_progress"))
    _drop_ranking_columns(path)
    wanted = {(t, c) for t, c, _ in ADDED_COLUMNS}
    assert not wanted & _columns(path)

    async with connect(path, read_only=True) as store:  # nothing to rank with yet, and no error
        assert await store.ranking_rows() == [] and await store.entity_vectors() == []
        assert await store.pending_ranking_texts() == []
        assert len(await store.document_passages(ALPHA.key)) == 2  # everything else reads as before
        assert [h.context for h in await store.search_passages("Babbage")] == ["", ""]  # no contexts before them
        assert (await store.term_counts(["london"])).counts == {"london": 1}
        [step] = await store.list_steps("p", "t", "in_progress")  # set before steps had supports
        assert step.name == "s" and step.supports == ()

    async with connect(path) as store:
        assert wanted <= _columns_while_open(store)
        rows = await store.ranking_rows()
        assert {r.document for r in rows} == {ALPHA.key}  # old passages, no sentences until re-ingested
        pending = await store.pending_ranking_texts(limit=100)
        assert sum(t.kind == "entity" for t in pending) == 4  # their entities' names wait for finalize
        assert sum(t.kind == "fact" for t in pending) == 3  # and so do their relations' facts
        assert (await store.list_steps("p", "t", "in_progress"))[0].supports == ()


async def test_a_file_from_before_fact_vectors_keeps_graph_ranking_read_only(tmp_path: Path) -> None:
    """Only the relations' vector column missing: a read-only open still hands graph ranking its
    inputs and finds no facts by vector (no error); a writable open adds the column."""
    path = tmp_path / "old.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
    _alter(path, "ALTER TABLE RELATES DROP embedding")
    async with connect(path, read_only=True) as store:
        assert {r.document for r in await store.ranking_rows()} == {ALPHA.key}
        pending = await store.pending_ranking_texts(limit=100)
        assert pending and not any(t.kind == "fact" for t in pending)
        assert await store.search_facts([1.0, 0.0, 0.0], 5) == []
    async with connect(path) as store:
        assert sum(t.kind == "fact" for t in await store.pending_ranking_texts(limit=100)) == 3


async def test_a_file_from_before_property_sources_keeps_graph_ranking_read_only(tmp_path: Path) -> None:
    """Only the columns of who set each property missing: nothing reads them on a read-only open,
    so graph ranking keeps its inputs."""
    path = tmp_path / "old.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
    _alter(path, *(f"ALTER TABLE {table} DROP {SOURCES_COLUMN}" for table in ("Entity", "RELATES")))
    async with connect(path, read_only=True) as store:
        assert {r.document for r in await store.ranking_rows()} == {ALPHA.key}
        assert sum(t.kind == "entity" for t in await store.pending_ranking_texts(limit=100)) == 4


def _columns_while_open(store: object) -> set[tuple[str, str]]:
    executor = store.executor  # type: ignore[attr-defined]
    out = set()
    for table in {t for t, _, _ in ADDED_COLUMNS}:
        out |= {
            (table, r["name"])
            for r in executor.read_sync(lambda tx, t=table: tx.rows(f"CALL TABLE_INFO('{t}') RETURN name"))
        }
    return out


async def test_reextract_gives_an_old_knowledge_base_its_bridge_sentences(tmp_path: Path) -> None:
    from evigraph import KnowledgeBase

    doc = tmp_path / "boris.txt"
    doc.write_text("Boris Kellerman directed Harbour Lights Rising in Tallinn. He liked boats.\n")
    path = tmp_path / "old.db"
    async with KnowledgeBase(path, extractor="rules") as kb:
        assert (await kb.ingest([doc], progress=False)).ok
    _drop_ranking_columns(path)
    async with KnowledgeBase(path, extractor="rules") as kb:
        assert (await kb.ingest([doc], progress=False)).counts()["unchanged"] == 1
        assert await kb.store.ranking_rows() != [] and all(not r.sentences for r in await kb.store.ranking_rows())
        report = await kb.ingest([doc], progress=False, reextract=True)
        assert report.counts()["updated"] == 1
        [row] = await kb.store.ranking_rows()
        assert row.sentences and row.sentence_vectors is None  # spans stored; vectors wait for an embedder


def _as_before_packed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Create and write files as the release before `packed` did: engine lists on relationships."""
    from evigraph.store.embedded import schema, store, writes

    old = tuple(
        statement.replace("span_starts STRING, span_ends STRING", "span_starts INT64[], span_ends INT64[]").replace(
            "source_chunks STRING, embedding FLOAT[])", "source_chunks STRING[])"
        )
        for statement in schema.DDL
    )
    assert old != schema.DDL
    monkeypatch.setattr(store, "DDL", old)
    monkeypatch.setattr(writes, "pack", list)
    monkeypatch.setattr(store, "upgrade_columns", lambda tx, path: None)  # that release wrote them


def _types(path: Path) -> dict[tuple[str, str], str]:
    conn = engine_connection(path, read_only=True)
    found = {}
    for table in {t for t, _, _ in RETYPED_COLUMNS}:
        result = conn.execute(f"CALL TABLE_INFO('{table}') RETURN name, type")
        while result.has_next():
            name, kind = result.get_next()
            found[(table, name)] = kind
    conn.close()
    conn.database.close()
    return found


async def test_lists_on_relationships_become_text_and_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evigraph import KnowledgeBase

    path = tmp_path / "old.db"
    text = "Ada Lovelace worked with Charles Babbage in London. Charles Babbage lived in London."
    with monkeypatch.context() as before_packed:
        _as_before_packed(before_packed)
        async with KnowledgeBase(path, extractor="rules") as kb:
            assert (await kb.ingest(text=text, key="ada")).ok
            assert kb.store is not None
            before = await _relations(kb)
            spans_before = await kb.store.ranking_rows()
    assert before and any(len(r.source_passages) == 1 for r in before)
    assert any(m[2] for row in spans_before for m in row.mentions)  # mention spans, to compare
    assert _types(path)[("RELATES", "source_chunks")] == "STRING[]"
    assert _types(path)[("MENTIONED_IN", "span_starts")] == "INT64[]"

    async with KnowledgeBase(path, read_only=True) as kb:  # an old file read as it is
        assert await _relations(kb) == before
        assert kb.store is not None and await kb.store.ranking_rows() == spans_before

    async with KnowledgeBase(path) as kb:  # writable: reads work, writes wait for a compaction
        assert await _relations(kb) == before
        with pytest.raises(StoreError, match="evigraph compact") as refused:
            await kb.ingest(text=text + " Ada Lovelace wrote notes.", key="ada")
        assert "reading it read-only works" in (refused.value.hint or "")
        report = await kb.compact()
        assert report.replaced
        assert await _relations(kb) == before  # every relation and span carried over, as text now
        assert kb.store is not None and await kb.store.ranking_rows() == spans_before
        assert (await kb.ingest(text=text + " Ada Lovelace wrote notes.", key="ada")).ok
        assert (await kb.check()).ok
    types = _types(path)
    assert {types[(t, c)] for t, c, _ in RETYPED_COLUMNS} == {"STRING"}
    assert not any(name.startswith("_") and name.endswith("_list") for _, name in types)


async def _relations(kb: Any) -> list[Any]:
    await kb.status()  # opens the store
    chunks = [c.id for c in await kb.store.document_passages("ada")]
    return sorted(await kb.store.relations_for_passages(chunks), key=lambda r: r.id)


def _indexes(path: Path) -> set[str]:
    return set(_first_column(path, ["CALL SHOW_INDEXES() RETURN index_name"])[0])


@pytest.mark.kuzu  # the releases that made full-text indexes wrote Kuzu files, with its extension
async def test_a_writable_open_drops_the_retired_full_text_indexes(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
        await write_shop(store)
    _alter(
        path,
        "LOAD EXTENSION fts",
        *(  # as an earlier release created them
            f"CALL CREATE_FTS_INDEX('{table}', '{name}', ['search_text'], stemmer := 'porter')"
            for name, table in RETIRED_FTS_INDEXES.items()
        ),
    )
    assert set(RETIRED_FTS_INDEXES) <= _indexes(path)

    async with connect(path, read_only=True) as store:  # reads as it is
        assert {h.document for h in await store.search_passages("Babbage")} == {ALPHA.key}
        assert [h.id for h in await store.search_code("backoff failure")] == [DELAY]
    assert set(RETIRED_FTS_INDEXES) <= _indexes(path)
    async with connect(path) as store:
        assert {h.document for h in await store.search_passages("Babbage")} == {ALPHA.key}
        await store.write_versions([ALPHA.model_copy(update={"content_hash": "again"})])
        assert [h.id for h in await store.search_code("backoff failure")] == [DELAY]
    assert _indexes(path) == set()  # a knowledge base keeps no full-text index now

    async with connect(path) as store:  # nor does compacting an old file bring them back
        compacted = await store.compact()
    assert compacted.bytes_after <= compacted.bytes_before
    assert _indexes(path) == set()
    async with connect(path, read_only=True) as store:
        assert [h.id for h in await store.search_code("backoff failure")] == [DELAY]


async def test_a_file_from_before_version_numbers_were_kept_numbers_on_past_a_delete(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
        await store.write_versions([ALPHA])
    _alter(path, f"DROP TABLE {VERSION_SEQ}")  # as an earlier release wrote the file

    async with connect(path, read_only=True) as store:  # reads as it is
        assert (await store.get_documents([ALPHA.key]))[ALPHA.key].version == 2
    async with connect(path) as store:  # gets the table; the delete keeps the number it removes
        assert await store.delete_document(ALPHA.key)
        assert [d.version for d in await store.write_versions([ALPHA])] == [3]
        assert (await store.check()).found == []
