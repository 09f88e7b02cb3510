"""The web UI driven by a real headless Chromium (Debian's `chromium`, through Playwright) against
a real `evigraph serve` on 127.0.0.1.

The server comes from the REST tests (`tests.api.conftest.serving`) on a copy of the MCP tests'
sample knowledge base (`sample_db`). Each test writes a screenshot of its view to
tests/ui/screenshots/ (not committed; docs/ui.png is one of them). A test fails on any
uncaught JavaScript error on the page.

Waits are Playwright's own (for a selector, or for a condition in the page), never sleeps.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.api.conftest import serving
from tests.mcp.conftest import HttpServer, copy_db
from tests.mcp.conftest import sample_db as sample_db  # the session fixture, shared with the MCP and REST tests

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Route

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    # no network of its own: without these Chromium calls home (updates, sync, QUIC probes)
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 900}
WAIT_MS = 60_000
"""Playwright's bound on every wait: generous, as the machine may be busy; nothing asserts a time."""


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """A headless Chromium for a test file; skipped only where no chromium is installed.

    Playwright's sync API runs an event loop in this thread while the browser is open, and the
    fixtures that build knowledge bases run theirs with asyncio.run, which cannot run inside it:
    so a browser lives for one file, and fixtures ask for their servers before the browser.
    """
    executable = chromium_path()
    if executable is None:
        pytest.skip("no chromium on PATH: install it (apt-get install chromium) to run the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def ui_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """`evigraph serve` as a user starts it (read-only: the UI uses the read tools only) on the sample."""
    db = copy_db(sample_db, tmp_path_factory.mktemp("ui"))
    with serving(db.parent, "--db", str(db)) as server:
        yield server


@dataclass
class Ui:
    """A browser tab on the server's web UI."""

    page: Page
    server: HttpServer
    errors: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)

    def open(self, path: str = "/") -> None:
        """Load the page and wait until it has reached the server and drawn the schema."""
        self.page.goto(self.server.base + path)
        self.page.wait_for_selector("#server-state.ok")
        self.page.wait_for_selector("#schema-labels li")

    def tab(self, view: str) -> None:
        self.page.click(f"#tab-{view}")
        self.page.wait_for_selector(f"#view-{view}:not([hidden])")

    def shot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def js(self, expression: str, arg: Any = None) -> Any:
        return self.page.evaluate(expression, arg)

    def wait_until(self, expression: str, arg: Any = None) -> None:
        """Until `expression` (a function of `arg`) is true in the page."""
        self.page.wait_for_function(expression, arg=arg)

    def session(self) -> str:
        """The evidence session this tab sends (X-Evigraph-Session)."""
        sid: str = self.js("() => sessionStorage.getItem('evigraph.session')")
        return sid


@pytest.fixture
def ui(ui_server: HttpServer, browser: Browser) -> Iterator[Ui]:
    yield from tab_on(browser, ui_server)


def tab_on(browser: Browser, server: HttpServer) -> Iterator[Ui]:
    """A fresh browser context (own sessionStorage, so its own evidence session) on `server`."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    tab = Ui(page, server)
    page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    context.route("**/*", lambda route: _same_server(route, server, tab.elsewhere))
    try:
        yield tab
    finally:
        context.close()
    assert not tab.errors, f"JavaScript errors on the page: {tab.errors}"
    assert not tab.elsewhere, f"the page asked for something off its server (it must work offline): {tab.elsewhere}"


def _same_server(route: Route, server: HttpServer, elsewhere: list[str]) -> None:
    """Let requests to the server through; refuse (and note) any other, as an offline machine would."""
    url = route.request.url
    if url.startswith(server.base + "/"):
        route.continue_()
    else:
        elsewhere.append(url)
        route.abort()
