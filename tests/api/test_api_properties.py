"""Declared properties over REST: the same tools, the same checks, errors with the fix."""

from __future__ import annotations

from pathlib import Path

from tests.api.conftest import call_tool, error_of, rest_client, serving
from tests.mcp.conftest import copy_db

ORG = {"name": "Tidewater Labs", "label": "Organization"}


async def test_properties_over_rest(sample_db: Path, tmp_path: Path) -> None:
    db = copy_db(sample_db, tmp_path)
    with serving(db.parent, "--db", str(db), "--allow-writes") as server:
        async with rest_client(server) as client:
            change = await call_tool(
                client,
                "set_ontology",
                {"entities": [{"label": "Organization", "properties": [{"name": "founded", "type": "integer"}]}]},
            )
            assert change["added_properties"] == ["Organization.founded"]
            await call_tool(client, "upsert_entities", {"entities": [{**ORG, "properties": {"founded": 1999}}]})
            found = await call_tool(client, "search_entities", {"query": "Tidewater Labs", "limit": 3})
            card = next(h for h in found["hits"] if h["name"] == "Tidewater Labs")
            assert card["properties"] == {"founded": 1999} and card["property_sources"] == {"founded": "agent"}
            wrong = await client.post(
                "/api/tools/upsert_entities", json={"entities": [{**ORG, "properties": {"founded": "1999"}}]}
            )
            body = error_of(wrong, wrong.status_code)
            assert wrong.status_code in (400, 422)
            assert "integer" in str(body) and "whole number" in str(body)
