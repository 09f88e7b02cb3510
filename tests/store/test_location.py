"""Opening a store from a path or a URL: what is understood, what is refused, and that refusing creates nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tests.store.contract.conftest import ALPHA, BETA

from evigraph.errors import (
    ConfigurationError,
    EngineUnavailableError,
    NotAKnowledgeBaseError,
    ReadOnlyQueryError,
)
from evigraph.store import DEFAULT_DB, SCHEMES, StoreLocation, connect, resolve_db_path
from evigraph.store.embedded.store import EmbeddedStore
from evigraph.store.scoped import ScopedStore


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in an empty folder without $EVIGRAPH_DB, so "nothing created" can be checked."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVIGRAPH_DB", raising=False)
    return tmp_path


def test_paths_and_embedded_urls_name_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert StoreLocation.parse("kb.db").path == Path("kb.db")
    assert StoreLocation.parse("~/kb.db").path == Path.home() / "kb.db"
    url = StoreLocation.parse(f"kuzu://{tmp_path}/my%20kb.db")
    assert (url.path, url.engine, url.embedded) == (tmp_path / "my kb.db", "kuzu", True)
    assert url.display == f"kuzu://{tmp_path}/my kb.db"
    assert StoreLocation.parse("LadyBug:///srv/kb.db").engine == "ladybug"
    assert StoreLocation.parse(None).path == Path(DEFAULT_DB)
    monkeypatch.setenv("EVIGRAPH_DB", f"kuzu://{tmp_path}/env.db")
    assert StoreLocation.parse(None).path == tmp_path / "env.db"
    assert resolve_db_path() == tmp_path / "env.db"
    assert resolve_db_path("other.db") == Path("other.db")  # a given value wins over the environment
    monkeypatch.setenv("EVIGRAPH_DB", "")
    assert resolve_db_path() == Path(DEFAULT_DB)


def test_an_unknown_scheme_is_refused_with_the_supported_ones() -> None:
    with pytest.raises(ConfigurationError, match="unknown database scheme postgres://") as err:
        StoreLocation.parse("postgres://admin:hunter22@db/kb")
    assert all(f"{s}://" in err.value.hint for s in SCHEMES)
    assert "hunter22" not in str(err.value)


def test_kuzu_url_with_a_relative_path_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="no absolute path") as err:
        connect("kuzu://data/kb.db")
    assert "three slashes" in err.value.hint and "data/kb.db" in err.value.hint
    with pytest.raises(ConfigurationError, match="names no database file"):
        StoreLocation.parse("kuzu:///")


async def test_falkordb_locations_parse_without_connecting(in_tmp: Path) -> None:
    where = StoreLocation.parse("falkordb://reader:s3cret-pass@graphs.local:6380/team")
    assert (where.host, where.port, where.graph, where.username, where.path) == (
        "graphs.local",
        6380,
        "team",
        "reader",
        None,
    )
    assert "s3cret-pass" not in where.display and "s3cret-pass" not in repr(where)
    assert StoreLocation.parse("falkordb://localhost").port == 6379
    connect(where, scope=["team/*"])  # built, not opened: nothing is contacted
    with pytest.raises(ConfigurationError, match="not a database file") as err:
        resolve_db_path("falkordb://localhost:6379/kb")
    assert "kuzu:///" in err.value.hint
    replicas = StoreLocation.parse("falkordb://h:1/kb?replicas=r1:2,r2:3")
    assert replicas.replicas == (("r1", 2), ("r2", 3)) and replicas.display.endswith("?replicas=r1:2,r2:3")
    for bad in ("falkordb://h/kb?replica=r1:2", "falkordb://h/kb?replicas=r1", "falkordb://h/kb?replicas=r1:0"):
        with pytest.raises(ConfigurationError, match="replica"):
            StoreLocation.parse(bad)


async def test_a_folder_that_is_not_a_database_is_refused_untouched(in_tmp: Path) -> None:
    folder = in_tmp / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("hello")
    for db in (folder, f"ladybug://{folder}"):
        store = connect(db)
        with pytest.raises(NotAKnowledgeBaseError, match="folder") as err:
            await store.open()
        assert err.value.hint
    assert sorted(os.listdir(in_tmp)) == ["notes"] and os.listdir(folder) == ["a.txt"]


async def test_an_engine_url_opens_the_file_it_names(in_tmp: Path) -> None:
    path = in_tmp / "sub" / "kb.db"
    async with connect(f"ladybug://{path}") as store:
        assert isinstance(store, EmbeddedStore) and store.path == path and store.engine == "ladybug"
        await store.write_versions([ALPHA])
    async with connect(path, read_only=True) as plain:  # the same knowledge base, by its path
        assert (await plain.counts()).documents == 1
    with pytest.raises(ConfigurationError, match="names the ladybug engine"):
        connect(f"ladybug://{path}", engine="kuzu")
    assert isinstance(connect(f"ladybug://{path}", engine="ladybug"), EmbeddedStore)
    with pytest.raises(ConfigurationError, match="names the kuzu engine"):
        connect(f"kuzu://{path}", engine="ladybug")


async def test_a_ladybug_url_picks_that_engine(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ladybug", None)  # not installed: importing it fails
    store = connect(f"ladybug://{in_tmp}/kb.db")
    with pytest.raises(EngineUnavailableError, match="LadybugDB is not installed"):
        await store.open()
    assert os.listdir(in_tmp) == []


async def test_scope_is_an_option_of_opening(in_tmp: Path) -> None:
    async with connect(in_tmp / "kb.db") as store:
        await store.write_versions([ALPHA, BETA])
    assert isinstance(connect(in_tmp / "kb.db", scope=()), EmbeddedStore)  # empty: no scope
    async with connect(in_tmp / "kb.db", read_only=True, scope=["team/beta"]) as scoped:
        assert isinstance(scoped, ScopedStore) and scoped.read_only and scoped.scope == ("team/beta",)
        assert [d.key for d in await scoped.list_documents()] == [BETA.key]
        assert scoped.cypher_guide()
        with pytest.raises(ReadOnlyQueryError, match="scope"):
            await scoped.cypher_query("MATCH (d:Document) RETURN d.key")  # Cypher cannot be bounded by a scope
        assert all(t.sample_keys == [] for t in await scoped.schema_tables())
