"""FalkorDB merges: a merge stopped midway is found and finished, and the server-held lock."""

from __future__ import annotations

import itertools
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from tests.store.contract.test_contract_merging import ADA, JOHN, JSMITH, A, B

from evigraph.errors import StoreError
from evigraph.store import connect
from evigraph.store.falkordb import merging
from evigraph.store.falkordb.locks import ServerLock, server_lock
from evigraph.store.falkordb.store import FalkorStore
from evigraph.store.merging import EntityMerge

pytest.importorskip("falkordb")

_GRAPHS = itertools.count()


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from evigraph.store.falkordb.server import LocalServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = LocalServer(tmp_path_factory.mktemp("falkordb"), port=port, host="127.0.0.1")
    server.start(persist=False)
    try:
        yield f"falkordb://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest_asyncio.fixture
async def store(server_url: str) -> AsyncIterator[FalkorStore]:
    async with connect(f"{server_url}/kb_merge_{next(_GRAPHS)}") as opened:
        assert isinstance(opened, FalkorStore)
        yield opened


async def test_a_merge_stopped_before_its_deletes_is_reported_and_finished(
    store: FalkorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.write_versions([A, B])

    def crash(conn: object, ids: object) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(merging, "delete_entities", crash)
    with pytest.raises(RuntimeError):
        await store.merge_entities([EntityMerge(survivor=JOHN, merged=(JSMITH,))])
    monkeypatch.undo()

    assert await store.entity_redirects() == {JSMITH: JOHN}  # recorded first: later writes go to John
    report = await store.check()
    assert [p.kind for p in report.found] == ["unfinished_merges"] and report.found[0].examples == [JSMITH]

    repaired = await store.check(repair=True)
    assert repaired.repaired == {"unfinished_merges": 1} and repaired.remaining == []
    assert await store.entities_by_ids([JSMITH]) == []
    counts = await store.counts()
    assert (counts.entities, counts.relations, counts.mentions) == (3, 3, 5)  # as one whole merge leaves it
    assert any(n.target == JOHN for n in await store.neighbours([ADA]))


async def test_merging_again_is_harmless(store: FalkorStore) -> None:
    await store.write_versions([A, B])
    first = await store.merge_entities([EntityMerge(survivor=JOHN, merged=(JSMITH,))])
    again = await store.merge_entities([EntityMerge(survivor=JOHN, merged=(JSMITH,))])
    assert first.merged == 1 and (again.merged, again.skipped) == (0, (JOHN,))


async def test_the_lock_is_held_by_one_and_released_only_by_its_holder(store: FalkorStore) -> None:
    conn = store.conn
    with server_lock(conn, "test", ttl_ms=5000) as held:
        other = ServerLock(conn, "test", wait_s=0.1)
        with pytest.raises(StoreError, match=r"the test lock on .* stayed taken"):
            other.acquire()
        other.release()  # not its lock: nothing happens
        held.renew()
        assert conn.command("GET", held.key) == held.token
    assert conn.command("GET", held.key) is None
    lapsed = ServerLock(conn, "test", ttl_ms=1)
    lapsed.acquire()
    conn.command("DEL", lapsed.key)
    with pytest.raises(StoreError, match="lapsed"):
        lapsed.renew()
