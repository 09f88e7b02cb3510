"""Trace tables reach knowledge bases written before them, and a document scope passes traces through."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import engine_connection
from tests.store.contract.conftest import ALPHA

from evigraph.errors import TaskNotFoundError
from evigraph.store import connect
from evigraph.store.embedded.schema import TRACE_TABLES
from evigraph.trace_records import NewEvent


def _drop_trace_tables(path: Path) -> None:
    conn = engine_connection(path)
    for table in TRACE_TABLES:
        conn.execute(f"DROP TABLE {table}")
    conn.close()
    conn.database.close()


async def test_an_old_file_reads_no_tasks_and_gets_the_tables_on_a_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with connect(path) as store:
        await store.write_versions([ALPHA])
    _drop_trace_tables(path)

    async with connect(path, read_only=True) as store:
        assert await store.get_task("p", "t") is None
        with pytest.raises(TaskNotFoundError):
            await store.list_events("p", "t")
        with pytest.raises(TaskNotFoundError):
            await store.list_steps("p", "t", "completed")
        assert len(await store.document_passages(ALPHA.key)) == 2

    async with connect(path) as store:
        task = await store.create_task("p", "ann", "t", "g")
        assert task.events == 0
        assert len(await store.document_passages(ALPHA.key)) == 2


async def test_a_document_scope_does_not_hide_traces(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    async with connect(path, scope=["team-a/*"]) as scoped:
        await scoped.create_task("p", "ann", "t", "g")
        await scoped.record_event(
            "p", "ann", "t", NewEvent(kind="note", payload="x", chars=1, sha256="h", truncated=False)
        )
    async with connect(path, read_only=True, scope=["nothing/*"]) as narrow:
        task = await narrow.get_task("p", "t")
        assert task is not None and task.events == 1
        assert [e.seq for e in await narrow.list_events("p", "t")] == [1]


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (t:TraceTask) RETURN t.name AS n",
        "MATCH (t:`tracetask`) RETURN count(t) AS n",
        "MATCH (n) WHERE n.goal IS NOT NULL RETURN n.goal AS g",
        "MATCH (n) RETURN count(n) AS n",
        "MATCH (e:Entity) OPTIONAL MATCH (n) WHERE n.id = e.id RETURN count(n) AS n",
        "CALL table_info('TraceEvent') RETURN *",
        "MATCH (d:TraceDecision) RETURN d.conclusion AS c",
        "MATCH (s:TraceSupport) RETURN s.ref AS r",
        "MATCH (q:tracereview) RETURN count(q) AS n",
    ],
)
async def test_free_form_cypher_cannot_read_traces(tmp_path: Path, cypher: str) -> None:
    from evigraph.errors import CypherRefused

    async with connect(tmp_path / "kb.db") as store:
        await store.write_versions([ALPHA])
        await store.create_task("p", "ann", "secret", "a private goal")
        with pytest.raises(CypherRefused, match=r"knowledge[ -]graph"):
            await store.cypher_query(cypher)
        rows = await store.cypher_query("MATCH (e:Entity) RETURN count(e) AS n")  # labelled reads still run
        assert rows == [{"n": 4}]
