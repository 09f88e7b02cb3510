"""Code symbols in the web UI: a class picked under "Start from" is drawn with its neighbours (its
module, its method, its base class), and the sidebar counts the code."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from tests.api.conftest import serving
from tests.code.conftest import DELAY, NOTES, POLICY, write_client
from tests.mcp.conftest import HttpServer, copy_db
from tests.ui.conftest import Ui, tab_on

from evigraph import KnowledgeBase

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.slow
CLASS_NEIGHBOURS = {"client.http.RetryPolicy", "client.http", "client.http.RetryPolicy.delay", "client.http.Base"}


async def add_code(db: Path, source: Path) -> None:
    async with KnowledgeBase(db) as kb:
        await kb.ingest([], text=NOTES, key="notes/waits")
        await kb.ingest_code([write_client(source)])


@pytest.fixture(scope="module")
def code_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """`evigraph serve` on the sample with a small package's code ingested beside its documents."""
    db = copy_db(sample_db, tmp_path_factory.mktemp("ui-code"))
    asyncio.run(add_code(db, tmp_path_factory.mktemp("ui-code-src")))
    with serving(db.parent, "--db", str(db)) as server:
        yield server


@pytest.fixture
def code(code_server: HttpServer, browser: Browser) -> Iterator[Ui]:
    yield from tab_on(browser, code_server)


def drawn_names(tab: Ui) -> set[str]:
    return set(tab.js("() => window.evigraph.graph.nodes().map(n => n.data('name'))"))


def test_starting_from_a_class_draws_it_and_its_neighbours(code: Ui) -> None:
    code.open()
    assert "Code: 3 files" in code.page.inner_text("#schema-code")
    code.page.fill("#entity-input", "RetryPolicy")
    code.page.press("#entity-input", "Enter")
    code.page.click("#entity-hits .chip:has-text('client.http.RetryPolicy (Class)')")
    code.page.wait_for_selector("#inspector h3:has-text('client.http.RetryPolicy')")
    code.wait_until("() => window.evigraph.graph.nodes().length >= 4 && window.evigraph.graph.edges().length >= 3")
    assert drawn_names(code) == CLASS_NEIGHBOURS
    assert code.page.get_attribute("#graph-status", "data-nodes") == str(len(CLASS_NEIGHBOURS))
    assert code.page.get_attribute("#graph-status", "data-edges") == "3"
    types = set(code.js("() => window.evigraph.graph.edges().map(e => e.data('type'))"))
    assert types == {"CONTAINS", "INHERITS"}
    assert "error-box" not in (code.page.get_attribute("#graph-notice", "class") or "")  # no refusal shown
    code.shot("graph-code-class")

    # expanding its method draws the function that calls it, beside what is there
    code.js("id => window.evigraph.explorer.expand(id)", DELAY)
    code.wait_until("() => window.evigraph.graph.nodes().some(n => n.data('name') === 'client.http.fetch')")
    assert drawn_names(code) > CLASS_NEIGHBOURS
    calls = code.js("() => window.evigraph.graph.edges().filter(e => e.data('type') === 'CALLS').length")
    assert calls == 1


def test_the_rest_route_explores_a_symbol_and_refuses_an_unknown_one(code_server: HttpServer) -> None:
    reply = httpx.post(f"{code_server.base}/api/tools/explore_relationships", json={"entity": POLICY}, timeout=60)
    assert reply.status_code == 200, reply.text
    walk = reply.json()
    assert {n["name"] for n in walk["nodes"]} == CLASS_NEIGHBOURS
    assert [p["text"] for p in walk["passages"]] == [NOTES]
    unknown = httpx.post(
        f"{code_server.base}/api/tools/explore_relationships", json={"entity": POLICY + "Gone"}, timeout=60
    )
    assert unknown.status_code == 400, unknown.text  # the caller's to fix
    assert "no code symbol" in unknown.text and "search_entities" in unknown.text
