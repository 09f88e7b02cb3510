"""An index change returns once the server has built it: FalkorDB builds indexes in the background
and writes made meanwhile can be lost (`store/falkordb/index_changes.py`). A real server."""

from __future__ import annotations

import time

import pytest
from tests.conftest import FalkorServer

from evigraph.errors import StoreError
from evigraph.store import connect
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.index_changes import settle
from evigraph.store.falkordb.schema import vector_index
from evigraph.store.falkordb.store import FalkorStore

PASSAGES = 5_000
"""Enough stored vectors that building their index takes a few hundred milliseconds."""


@pytest.fixture
def db(falkordb_server: FalkorServer) -> str:
    return f"falkordb://{falkordb_server.host}:{falkordb_server.port}/indexes_{time.monotonic_ns()}"


def _store_vectors(conn: Connection) -> None:
    conn.write_sync(
        f"UNWIND range(1, {PASSAGES}) AS i CREATE (:Chunk {{id: 'c' + toString(i), live: true, "
        "embedding: vecf32([1.0, toFloat(i % 7), toFloat(i)])})"
    )


def _building(conn: Connection) -> list[str]:
    rows = conn.read_sync("CALL db.indexes() YIELD label, status RETURN label, status")
    return [r["label"] for r in rows if r["status"] != "OPERATIONAL"]


async def test_setting_the_model_returns_once_its_vector_index_is_built(db: str) -> None:
    async with connect(db) as store:
        assert isinstance(store, FalkorStore)
        _store_vectors(store.conn)
        await store.set_embedding_model("three", 3)
        assert _building(store.conn) == []
        assert len(await store.vector_search([1.0, 0.0, 7.0], limit=3)) == 3


async def test_a_build_outlasting_the_limit_is_an_error_naming_the_index(db: str) -> None:
    async with connect(db) as store:
        assert isinstance(store, FalkorStore)
        _store_vectors(store.conn)
        store.conn.write_sync(vector_index(3))
        with pytest.raises(StoreError, match=r"still building indexes after 0 s: Chunk") as caught:
            settle(store.conn, limit_s=0.0)
        assert "run the write again" in (caught.value.hint or "")
        settle(store.conn)
        assert _building(store.conn) == []
