"""`evigraph serve --db-dir`: every NAME.db in a folder, chosen per request by name, never by path."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.api.conftest import add_note, call_tool, error_of, kb_folder, rest_client, serving
from tests.mcp.conftest import QUESTION, HttpServer, copy_db, numbers

pytestmark = pytest.mark.slow
QUARRY = "Quarry Lab is a workshop in Braga. Ines Duarte founded Quarry Lab in 2020."


@pytest.fixture(scope="module")
def folder(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha.db (the sample), beta.db (the sample and one more note), and files that are not served."""
    where = kb_folder(sample_db, tmp_path_factory.mktemp("kbs"), QUARRY)
    for clutter in ("notes.txt", ".hidden.db", "bad name.db", "alpha.db.bak", "broken.db"):
        (where / clutter).write_text("not served")  # broken.db is listed, but is no knowledge base
    return where


@pytest.fixture(scope="module")
def dir_server(folder: Path) -> Iterator[HttpServer]:
    with serving(folder, "--db-dir", str(folder), "--allow-writes") as server:
        yield server


async def documents(server: HttpServer, **selector: str) -> int:
    """The document count of the knowledge base a request with `selector` (db= or header=) reaches."""
    headers = {"X-Evigraph-Db": selector["header"]} if "header" in selector else None
    params = {"db": selector["db"]} if "db" in selector else {}
    async with rest_client(server, headers=headers) as client:
        count: int = (await call_tool(client, "status", **params))["documents"]
        return count


async def test_requests_choose_by_query_or_header(dir_server: HttpServer, folder: Path) -> None:
    assert "3 knowledge bases: alpha, beta, broken" in dir_server.stderr()
    async with rest_client(dir_server) as client:
        listed = (await client.get("/api/dbs")).json()
        assert listed["default"] is None
        assert listed["dbs"] == [{"name": n, "open": False} for n in ("alpha", "beta", "broken")]
    assert await documents(dir_server, db="alpha") == 3
    assert await documents(dir_server, header="beta") == 4
    assert await documents(dir_server, db="alpha", header="beta") == 3  # the query wins
    async with rest_client(dir_server) as client:
        assert [d["open"] for d in (await client.get("/api/dbs")).json()["dbs"]] == [True, True, False]  # kept open
        chosen = await client.get("/api/tools", params={"db": "beta"})
        assert chosen.json()["db"] == "beta"
        unchosen = error_of(await client.post("/api/tools/status"), 400)
        assert unchosen["available"] == ["alpha", "beta", "broken"] and "X-Evigraph-Db" in unchosen["hint"]

    copy_db(folder / "alpha.db", folder, "gamma.db")  # a file added later is served too
    assert await documents(dir_server, db="gamma") == 3
    shutil.copyfile(folder / "notes.txt", folder / "delta.txt")
    async with rest_client(dir_server) as client:
        assert [d["name"] for d in (await client.get("/api/dbs")).json()["dbs"]] == ["alpha", "beta", "broken", "gamma"]


async def test_a_file_that_is_no_knowledge_base_gets_503_without_its_path(dir_server: HttpServer, folder: Path) -> None:
    async with rest_client(dir_server) as client:
        body = error_of(await client.post("/api/tools/status", params={"db": "broken"}), 503)
        assert "'broken'" in body["error"] and "not an evigraph database" in body["error"]
        assert str(folder) not in body["error"] + body["hint"]
        assert (await call_tool(client, "status", db="alpha"))["documents"] == 3  # the others still answer


async def test_an_unknown_name_gets_404_listing_the_names(dir_server: HttpServer) -> None:
    async with rest_client(dir_server) as client:
        for name in ("nope", "alpha.db", "notes", "hidden"):
            body = error_of(await client.post("/api/tools/status", params={"db": name}), 404)
            assert body["available"][:2] == ["alpha", "beta"] and name in body["error"], name
        by_header = error_of(await client.get("/api/tools", headers={"X-Evigraph-Db": "nope"}), 404)
        assert by_header["available"][:2] == ["alpha", "beta"]


@pytest.mark.parametrize("name", ["..", "../alpha", "/etc/passwd", "sub/alpha", "..\\alpha", ".hidden", "a..b", "x y"])
async def test_a_path_is_never_a_name(dir_server: HttpServer, folder: Path, name: str) -> None:
    async with rest_client(dir_server) as client:
        by_query = error_of(await client.post("/api/tools/status", params={"db": name}), 400)
        assert "never by path" in by_query["error"] and "alpha" in by_query["available"]
        if name.isascii() and name.isprintable():
            error_of(await client.get("/api/tools", headers={"X-Evigraph-Db": name}), 400)
    escaped = await _raw_status(dir_server, "/api/tools?db=%2e%2e%2falpha")  # ../alpha, percent-encoded
    assert escaped == 400


async def _raw_status(server: HttpServer, target: str) -> int:
    async with rest_client(server) as client:
        return (await client.get(target)).status_code


async def test_evidence_and_writes_stay_in_their_knowledge_base(dir_server: HttpServer) -> None:
    async with rest_client(dir_server, session="one", headers={"X-Evigraph-Db": "alpha"}) as alpha:
        n = max(numbers(await call_tool(alpha, "retrieve", {"question": QUESTION})))
        answer = f"Marta Oliveira founded Harbor Lab [{n}]."
        assert n in (await call_tool(alpha, "check_citations", {"answer": answer}))["cited"]
        note = {"text": "Cliff Unit is a survey team in Sagres.", "document_key": "cliff"}
        assert (await call_tool(alpha, "ingest", note))["documents"][0]["status"] == "ingested"
        assert (await call_tool(alpha, "search_passages", {"query": "Cliff Unit"}))["hits"]
    async with rest_client(dir_server, session="one", headers={"X-Evigraph-Db": "beta"}) as beta:
        assert n in (await call_tool(beta, "check_citations", {"answer": answer}))["invalid"]  # (db, session)
        assert not (await call_tool(beta, "search_passages", {"query": "Cliff Unit"}))["hits"]
        assert (await call_tool(beta, "search_passages", {"query": "Quarry Lab"}))["hits"]


def test_one_knowledge_base_in_the_folder_is_the_default(sample_db: Path, tmp_path: Path) -> None:
    copy_db(sample_db, tmp_path, "only.db")
    with serving(tmp_path, "--db-dir", str(tmp_path)) as server, httpx.Client(base_url=server.base) as http:
        assert http.get("/api/dbs").json() == {"dbs": [{"name": "only", "open": False}], "default": "only"}
        assert http.post("/api/tools/status").json()["documents"] == 3


async def test_symbolic_links_are_never_served(sample_db: Path, tmp_path: Path) -> None:
    """A link to a knowledge base outside the folder, one to a file inside it, and a real file whose
    write-ahead log is a link out: none is listed or opened, each name gets a 404 naming the link."""
    served, outside = tmp_path / "served", tmp_path / "outside"
    copy_db(sample_db, served, "alpha.db")
    await add_note(copy_db(sample_db, outside, "private.db"), QUARRY)  # holds QUARRY, which alpha does not
    (served / "out.db").symlink_to(outside / "private.db")
    (served / "inner.db").symlink_to(served / "alpha.db")
    copy_db(sample_db, served, "walled.db")
    (outside / "log").write_bytes(b"")
    (served / "walled.db.wal").symlink_to(outside / "log")
    with serving(served, "--db-dir", str(served)) as server:
        async with rest_client(server) as client:
            listed = (await client.get("/api/dbs")).json()["dbs"]
            assert [d["name"] for d in listed] == ["alpha", "walled"]
            for name, link in (("out", "out.db"), ("inner", "inner.db"), ("walled", "walled.db.wal")):
                for response in (
                    await client.post("/api/tools/search_passages", params={"db": name}, json={"query": "Quarry Lab"}),
                    await client.get("/api/tools", headers={"X-Evigraph-Db": name}),
                ):
                    body = error_of(response, 404)
                    assert f"{link} in the served folder is a symbolic link" in body["error"], body
                    assert "Quarry" not in response.text and str(outside) not in response.text
            assert (await call_tool(client, "status", db="alpha"))["documents"] == 3  # the real file is served
            assert [d["open"] for d in (await client.get("/api/dbs")).json()["dbs"]] == [True, False]
    assert (outside / "log").read_bytes() == b""  # nothing was written through the link
