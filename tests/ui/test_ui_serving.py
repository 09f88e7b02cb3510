"""How the page reaches what a server serves: with --db-dir, a picker of the knowledge bases; off
loopback, the token the server asks for."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.api.conftest import TOKEN, serving
from tests.mcp.conftest import HttpServer, copy_db
from tests.ui.conftest import Ui, tab_on

from evigraph import KnowledgeBase

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.slow


async def add_text(db: Path) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        report = await kb.ingest(text="Quarry Lab is a workshop in Braga.", key="quarry", progress=False)
        assert report.ok, report.failed


@pytest.fixture(scope="module")
def folder_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """alpha.db, the sample; beta.db, the sample and one more document."""
    folder = tmp_path_factory.mktemp("ui-dbs")
    copy_db(sample_db, folder, "alpha.db")
    asyncio.run(add_text(copy_db(sample_db, folder, "beta.db")))
    with serving(folder, "--db-dir", str(folder)) as server:
        yield server


@pytest.fixture
def tab(folder_server: HttpServer, browser: Browser) -> Iterator[Ui]:
    yield from tab_on(browser, folder_server)


def test_picker_switches_knowledge_base(tab: Ui) -> None:
    tab.open()
    assert tab.page.is_visible("#db-picker")
    assert tab.page.locator("#db-select option").all_inner_texts() == ["alpha", "beta"]
    assert tab.page.inner_text("#server-state") == "connected · alpha"
    assert tab.page.inner_text("#schema .counts div:first-child b") == "3"

    tab.page.select_option("#db-select", "beta")
    tab.page.wait_for_url("**/?db=beta*")
    tab.page.wait_for_selector("#server-state:has-text('beta')")
    tab.page.wait_for_selector("#schema .counts div:first-child b:text-is('4')")
    tab.tab("documents")
    tab.page.wait_for_selector("#documents-table tbody tr >> text=quarry")
    tab.shot("documents-beta")


@pytest.fixture(scope="module")
def token_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """Bound to every address, so the server requires its token on /api."""
    db = copy_db(sample_db, tmp_path_factory.mktemp("ui-token"))
    with serving(db.parent, "--db", str(db), host="0.0.0.0", env={"EVIGRAPH_MCP_TOKEN": TOKEN}) as server:
        yield server


@pytest.fixture
def guarded(token_server: HttpServer, browser: Browser) -> Iterator[Ui]:
    yield from tab_on(browser, token_server)


def test_page_asks_for_the_token_and_then_reads(guarded: Ui) -> None:
    guarded.page.goto(guarded.server.base + "/")
    guarded.page.wait_for_selector("#server-state:has-text('token needed')")
    guarded.page.fill("#fatal input[type=password]", TOKEN)
    guarded.page.press("#fatal input[type=password]", "Enter")
    guarded.page.wait_for_selector("#server-state.ok")
    guarded.page.wait_for_selector("#schema-labels li")
    assert guarded.page.is_hidden("#fatal")
