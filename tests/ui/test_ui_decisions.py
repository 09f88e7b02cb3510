"""The decisions view: a decision an agent recorded is shown for review once its source changed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.api.conftest import serving
from tests.mcp.conftest import HttpServer
from tests.ui.conftest import Ui, tab_on

from evigraph import KnowledgeBase
from evigraph.tools.toolkit import Toolkit

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.slow
PROJECT = ("--project", "harbor", "--agent", "analyst")
FUNDING = "# Funding\n\nReefWatch is funded by the Harbour Trust. The grant covers two survey boats.\n"


async def flagged_decision(db: Path, source: Path) -> None:
    """An agent reads the funding page whole and decides on it; then the page changes."""
    source.write_text(FUNDING, encoding="utf-8")
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        assert (await kb.ingest([source], progress=False)).ok
        agent = Toolkit(kb, project="harbor", agent="analyst")
        await agent.call("create_task", {"task_name": "funding", "goal": "Find who funds ReefWatch"})
        hits = (await agent.call("search_passages", {"query": "Who funds ReefWatch?", "mode": "lexical"})).hits  # type: ignore[attr-defined]
        await agent.call("read_passages", {"passages": [hits[0].n]})
        decision = {
            "task_name": "funding",
            "choice_key": "funder",
            "conclusion": "The Harbour Trust funds ReefWatch",
            "rationale": "The funding page names the trust.",
            "supports": [{"kind": "passage", "evidence": hits[0].n}],
        }
        await agent.call("record_decision", decision)
        source.write_text(FUNDING.replace("two survey boats", "three survey boats"), encoding="utf-8")
        assert (await kb.ingest([source], progress=False)).ok


@pytest.fixture(scope="module")
def project_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    folder = tmp_path_factory.mktemp("ui-decisions")
    asyncio.run(flagged_decision(folder / "kb.db", folder / "funding.md"))
    with serving(folder, "--db", str(folder / "kb.db"), *PROJECT) as server:
        yield server


@pytest.fixture
def tab(project_server: HttpServer, browser: Browser) -> Iterator[Ui]:
    yield from tab_on(browser, project_server)


def test_decisions_needing_review_are_listed_with_the_change(tab: Ui) -> None:
    tab.open()
    tab.page.wait_for_selector("#tab-decisions:not([hidden])")
    assert tab.page.inner_text("#decisions-count") == "1"
    tab.tab("decisions")
    card = tab.page.locator("#decisions-list .decision")
    assert card.count() == 1
    text = card.inner_text()
    assert "The Harbour Trust funds ReefWatch" in text and "needs review" in text
    assert "funding.md changed: read at version 1, now version 2" in text
    tab.shot("decisions")
