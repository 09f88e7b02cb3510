"""`Toolkit.for_tenant`: a toolkit bound to one tenant's own knowledge base beside a base location
(the graph `<graph>__<tenant>` on a real FalkorDB server, or the file `<stem>__<tenant>.db`), which
it owns and closes; tenants never see each other's documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from falkordb import FalkorDB
from tests.conftest import FalkorServer

from evigraph import Toolkit
from evigraph.errors import ConfigurationError, ToolError

pytestmark = pytest.mark.slow


async def _ingest(toolkit: Toolkit, text: str, key: str) -> None:
    result = await toolkit.call("ingest", {"text": text, "document_key": key})
    assert result.model_dump()["documents"][0]["status"] == "ingested"


async def _found(toolkit: Toolkit, query: str) -> list[str]:
    hits = (await toolkit.call("search_passages", {"query": query})).model_dump()["hits"]
    return [h["text"] for h in hits]


async def test_tenants_on_a_server_get_their_own_graphs(falkordb_server: FalkorServer) -> None:
    base = falkordb_server.url("shop")
    async with (
        Toolkit.for_tenant(base, "acme", extractor="rules") as acme,
        Toolkit.for_tenant(base, "globex", extractor="rules") as globex,
    ):
        await _ingest(acme, "Acme ships anvils from Tucson.", "anvils")
        await _ingest(globex, "Globex builds volcanoes in Cypress Creek.", "volcanoes")
        assert any("Tucson" in t for t in await _found(acme, "anvils Tucson"))
        assert await _found(globex, "anvils Tucson") == []
        assert acme.kb.location.display == f"falkordb://127.0.0.1:{falkordb_server.port}/shop__acme"
    graphs = FalkorDB(host="127.0.0.1", port=falkordb_server.port, password=falkordb_server.password).list_graphs()
    assert {"shop__acme", "shop__globex"} <= set(graphs) and "shop" not in graphs
    assert not acme.kb._opened and not globex.kb._opened  # closed with the toolkits that owned them


async def test_tenants_of_a_file_get_files_beside_it(tmp_path: Path) -> None:
    base = tmp_path / "kb.db"
    async with Toolkit.for_tenant(base, "acme", extractor="rules", read_only=False) as acme:
        await _ingest(acme, "Acme ships anvils from Tucson.", "anvils")
    assert (tmp_path / "kb__acme.db").is_file() and not base.exists()
    async with Toolkit.for_tenant(str(base), "acme", read_only=True) as again:
        assert any("Tucson" in t for t in await _found(again, "anvils"))
        with pytest.raises(ToolError, match="read-only"):
            await again.call("ingest", {"text": "more", "document_key": "more"})


@pytest.mark.parametrize(
    "tenant",
    [
        *("", "../acme", "acme/x", "a b", "-acme", "x" * 65),
        "Acme",  # Acme and acme would share kb__acme.db on a file system that ignores case
        "a__b",  # base shop with tenant a__b would be base shop__a with tenant b
        "acme__",
    ],
)
def test_a_tenant_name_that_could_reach_elsewhere_is_refused(tmp_path: Path, tenant: str) -> None:
    with pytest.raises(ConfigurationError, match="not a tenant name") as caught:
        Toolkit.for_tenant(tmp_path / "kb.db", tenant)
    assert "letters, digits" in caught.value.hint and "'__'" in caught.value.hint
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_option_is_refused_naming_both_kinds(tmp_path: Path) -> None:
    # A programming mistake in the service's code, not a tool call's: refused as configuration.
    with pytest.raises(ConfigurationError, match=r"unknown option\(s\) for for_tenant: colour") as caught:
        Toolkit.for_tenant(tmp_path / "kb.db", "acme", colour="red")
    assert "Toolkit options" in caught.value.hint and "KnowledgeBase" in caught.value.hint
