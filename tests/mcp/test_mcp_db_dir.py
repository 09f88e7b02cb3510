"""One MCP server for a folder of knowledge bases (`evigraph mcp --db-dir`, and `evigraph serve
--with-mcp --db-dir`): each client names its knowledge base with the X-Evigraph-Db header (or
?db=) and gets that one's tools and evidence; served at --mcp-path when given. Real servers, the
real MCP SDK client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.api.conftest import INITIALIZE, MCP_ACCEPT, TOKEN, kb_folder, serving
from tests.conftest import free_port, run_cli
from tests.mcp.conftest import HttpServer, call, error_text, http_client, launch

from evigraph import ConfigurationError
from evigraph.api.config import ServeConfig
from evigraph.mcp.instructions import build_instructions
from evigraph.mcp.main import McpConfig

pytestmark = pytest.mark.slow

QUARRY = "Quarry Lab is a stone workshop in Braga, founded by Ines Duarte in 1998."


@pytest.fixture(scope="module")
def folder(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha.db (the sample) and beta.db (the sample and one more note)."""
    return kb_folder(sample_db, tmp_path_factory.mktemp("mcp-kbs"), QUARRY)


@pytest.fixture(scope="module")
def mcp_dir(folder: Path) -> Iterator[HttpServer]:
    port = free_port()
    argv = ["mcp", "--db-dir", str(folder), "--transport", "http", "--port", str(port), "--mcp-path", "/kb/mcp"]
    server = launch(argv, port, folder / f"mcp-{port}.log", cwd=folder)
    try:
        yield server
    finally:
        server.stop()


async def test_each_client_reaches_the_knowledge_base_it_names(mcp_dir: HttpServer) -> None:
    said = mcp_dir.stderr()
    assert "evigraph mcp on" in said and "2 knowledge bases: alpha, beta" in said
    assert f"MCP (streamable HTTP) at {mcp_dir.base}/kb/mcp" in said and "X-Evigraph-Db" in said
    url = f"{mcp_dir.base}/kb/mcp"
    async with (
        http_client(url, {"X-Evigraph-Db": "alpha"}) as alpha,
        http_client(url, {"X-Evigraph-Db": "beta"}) as beta,
    ):
        assert (await call(alpha, "status", {}))["documents"] == 3
        assert (await call(beta, "status", {}))["documents"] == 4
        found = await call(beta, "search_passages", {"query": "Quarry Lab Braga"})
        assert any("Braga" in hit["text"] for hit in found["hits"])
        missing = await call(alpha, "search_passages", {"query": "Quarry Lab Braga"})
        assert not any("Braga" in hit["text"] for hit in missing["hits"])
        assert "retrieve" in {t.name for t in (await alpha.list_tools()).tools}
    async with http_client(f"{url}?db=beta") as by_query:
        assert (await call(by_query, "status", {}))["documents"] == 4


async def test_a_client_naming_none_or_an_unknown_one_is_told_the_names(mcp_dir: HttpServer) -> None:
    url = f"{mcp_dir.base}/kb/mcp"
    async with http_client(url) as unnamed:
        said = await error_text(unnamed, "status", {})
        assert "several knowledge bases" in said and "X-Evigraph-Db" in said and "alpha, beta" in said
    async with http_client(url, {"X-Evigraph-Db": "gamma"}) as unknown:
        said = await error_text(unknown, "status", {})
        assert "no knowledge base named 'gamma'" in said and "alpha, beta" in said
    async with http_client(url, {"X-Evigraph-Db": "../alpha"}) as by_path:
        assert "never by path" in await error_text(by_path, "status", {})


async def test_serve_with_mcp_serves_the_folder_too(folder: Path) -> None:
    with serving(folder, "--db-dir", str(folder), "--with-mcp") as server:
        async with http_client(f"{server.base}/mcp", {"X-Evigraph-Db": "beta"}) as beta:
            assert (await call(beta, "status", {}))["documents"] == 4


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["mcp", "--db-dir", "{folder}"], "--db-dir serves a folder over streamable HTTP"),
        (["mcp", "--db", "{folder}/alpha.db", "--mcp-path", "/x"], "--mcp-path is where streamable HTTP is served"),
        (["mcp", "--db-dir", "{folder}", "--transport", "http", "--mcp-path", "/api/x"], "cannot be where MCP"),
        (["mcp", "--db", "{folder}/alpha.db", "--transport", "http", "--mcp-path", "/a b"], "cannot be where MCP"),
        (["mcp", "--db", "{folder}/alpha.db", "--max-open", "2"], "add --db-dir DIR"),
        (["serve", "--db", "{folder}/alpha.db", "--max-open", "2"], "add --db-dir DIR"),
        (["serve", "--db", "{folder}/alpha.db", "--mcp-path", "/m"], "add --with-mcp"),
        (["serve", "--db", "{folder}/alpha.db", "--with-mcp", "--mcp-path", "/js"], "clear of /api"),
    ],
)
def test_contradicting_flags_are_refused_in_one_line(folder: Path, args: list[str], says: str) -> None:
    result = run_cli(*(a.format(folder=folder) for a in args), "--port", str(free_port()))
    assert result.code == 2, result.err
    assert says in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 2


async def test_a_token_guards_a_folder_served_at_a_custom_path(folder: Path) -> None:
    port = free_port()
    argv = ["mcp", "--db-dir", str(folder), "--transport", "http", "--port", str(port), "--mcp-path", "/kb/mcp"]
    env = {"EVIGRAPH_MCP_TOKEN": TOKEN}
    with launch(argv, port, folder / f"mcp-{port}.log", cwd=folder, env=env) as server:
        url = f"{server.base}/kb/mcp"
        with httpx.Client(timeout=30) as http:
            refused = http.post(url, json=INITIALIZE, headers=MCP_ACCEPT)
            assert refused.status_code == 401, refused.text
        async with http_client(url, {"X-Evigraph-Db": "beta", "Authorization": f"Bearer {TOKEN}"}) as beta:
            assert (await call(beta, "status", {}))["documents"] == 4


def test_a_folder_off_loopback_without_a_token_is_refused_for_mcp(folder: Path) -> None:
    network = ("--host", "0.0.0.0", "--port", "1")
    result = run_cli("mcp", "--db-dir", str(folder), "--transport", "http", *network, env={"EVIGRAPH_MCP_TOKEN": ""})
    assert result.code == 2, result.err
    assert "refusing to serve MCP on 0.0.0.0" in result.err and "EVIGRAPH_MCP_TOKEN" in result.err
    assert "REST" not in result.err and "--token" not in result.err


async def test_the_folder_guide_names_only_tools_a_knowledge_base_serves(mcp_dir: HttpServer) -> None:
    """The guide is sent before a client names a knowledge base: it leaves out what depends on one
    (answer needs its LLM, and these have none), so every step it gives is one the tools served allow."""
    async with http_client(f"{mcp_dir.base}/kb/mcp", {"X-Evigraph-Db": "alpha"}) as alpha:
        listed = {t.name for t in (await alpha.list_tools()).tools}
        guide = alpha.instructions or ""
    assert "retrieve" in listed and "answer" not in listed
    assert steps(guide) and steps(guide) <= steps(build_instructions(listed))


def steps(guide: str) -> set[str]:
    """The guide's numbered steps, without their numbers."""
    return {line.split(". ", 1)[1] for line in guide.splitlines() if line[:1].isdigit()}


def test_the_flag_checks_hold_in_python_too(folder: Path) -> None:
    """The checks live with the settings, not in the CLI, so a server started from Python gets them."""
    with pytest.raises(ConfigurationError, match="add --db-dir DIR"):
        ServeConfig.from_flags(db=str(folder / "alpha.db"), max_open=2)
    with pytest.raises(ConfigurationError, match="add --db-dir DIR"):
        McpConfig.from_env(db=str(folder / "alpha.db"), max_open=2)
    with pytest.raises(ConfigurationError, match="add --transport http"):
        McpConfig.from_env(db=str(folder / "alpha.db"), mcp_path="/x")
    with pytest.raises(ConfigurationError, match="serves a folder over streamable HTTP"):
        ServeConfig.from_flags(db_dir=str(folder), transport="stdio", rest=False, with_mcp=True)
    assert McpConfig.from_env(db=str(folder / "alpha.db"), transport="http", mcp_path="/kb/mcp").mcp_path == "/kb/mcp"
