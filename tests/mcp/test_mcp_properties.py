"""Declared properties over MCP, through the SDK's own client: declare, upsert, read, refuse."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.conftest import call, error_text, stdio_mcp_client

PERSON = {"name": "Mira Okafor", "label": "Person"}


async def test_properties_are_declared_written_and_read_over_mcp(db_copy: Path) -> None:
    async with stdio_mcp_client(db_copy, "--allow-writes", "--project", "p", "--agent", "mcp-agent") as client:
        declared = await call(
            client,
            "set_ontology",
            {"entities": [{"label": "Person", "properties": [{"name": "orcid", "type": "string"}]}]},
        )
        assert declared["added_properties"] == ["Person.orcid"]
        await call(client, "upsert_entities", {"entities": [{**PERSON, "properties": {"orcid": "0000-0002"}}]})
        found = await call(client, "search_entities", {"query": "Mira Okafor", "limit": 3})
        card = next(h for h in found["hits"] if h["name"] == "Mira Okafor")
        assert card["properties"] == {"orcid": "0000-0002"}
        assert card["property_sources"] == {"orcid": "agent:mcp-agent"}
        rows = await call(
            client, "cypher_query", {"query": "MATCH (e:Entity) WHERE e.orcid IS NOT NULL RETURN e.orcid AS o"}
        )
        assert rows["rows"] == [{"o": "0000-0002"}]
        refused = await error_text(client, "upsert_entities", {"entities": [{**PERSON, "properties": {"h_index": 3}}]})
        assert "'h_index' is not declared" in refused and "set_ontology" in refused
