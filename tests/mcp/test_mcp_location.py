"""`evigraph mcp --db` takes what every surface takes: a path or a URL naming the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.errors import ConfigurationError
from evigraph.mcp.main import McpConfig
from evigraph.store.location import StoreLocation


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVIGRAPH_DB", "EVIGRAPH_MCP_READ_ONLY", "EVIGRAPH_MCP_ALLOW_WRITES", "EVIGRAPH_MCP_FILES_ROOT"):
        monkeypatch.delenv(name, raising=False)


def test_a_kuzu_url_serves_the_file_it_names_with_that_engine(tmp_path: Path) -> None:
    config = McpConfig.from_env(db=f"kuzu://{tmp_path}/kb.db")
    assert (config.db, config.engine) == (tmp_path / "kb.db", "kuzu")
    assert McpConfig.from_env(db=str(tmp_path / "kb.db"), engine="ladybug").engine == "ladybug"
    with pytest.raises(ConfigurationError, match="names the kuzu engine"):
        McpConfig.from_env(db=f"kuzu://{tmp_path}/kb.db", engine="ladybug")


def test_a_server_url_is_served_as_is_and_an_unknown_scheme_is_refused(tmp_path: Path) -> None:
    config = McpConfig.from_env(db="falkordb://reader:s3cret@localhost:6379/kb")
    assert config.db == StoreLocation.parse("falkordb://reader:s3cret@localhost:6379/kb")
    assert "s3cret" not in config.describe() and "falkordb://reader:***@localhost:6379/kb" in config.describe()
    with pytest.raises(ConfigurationError, match="unknown database scheme"):
        McpConfig.from_env(db="neo4j://localhost/kb")
    assert list(tmp_path.iterdir()) == []
