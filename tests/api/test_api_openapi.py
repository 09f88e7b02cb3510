"""The OpenAPI document is generated from the same input models as the MCP schemas, and is valid."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openapi_spec_validator import validate
from tests.api.conftest import rest_client
from tests.mcp.conftest import HttpServer

pytestmark = pytest.mark.slow
REF = re.compile(r'"#/components/schemas/([^"]+)"')


def as_mcp_lists_it(name: str, components: dict[str, Any]) -> dict[str, Any]:
    """Component `name` with the definitions it reaches put back under $defs, as pydantic writes one model."""
    reached: set[str] = set()
    pending = [name]
    while pending:
        for ref in REF.findall(json.dumps(components[pending.pop()])):
            if ref not in reached:
                reached.add(ref)
                pending.append(ref)
    schema = dict(components[name])
    if reached:
        schema["$defs"] = {ref: components[ref] for ref in reached}
    moved: dict[str, Any] = json.loads(json.dumps(schema).replace("#/components/schemas/", "#/$defs/"))
    return moved


@pytest.fixture(params=["api_server", "full_server"])
def served(request: pytest.FixtureRequest) -> HttpServer:
    """The writable server, and the one offering every tool of the registry."""
    server: HttpServer = request.getfixturevalue(request.param)
    return server


async def test_the_document_is_valid_and_has_every_tool(served: HttpServer) -> None:
    async with rest_client(served) as client:
        document = (await client.get("/api/openapi.json")).json()
        specs = (await client.get("/api/tools")).json()["tools"]
    validate(document)  # OpenAPI 3.1, every $ref resolving inside the document
    assert document["openapi"] == "3.1.0"
    paths = document["paths"]
    for route in ("/api/health", "/api/dbs", "/api/tools", "/api/openapi.json"):
        assert "get" in paths[route], route
    components = document["components"]["schemas"]
    for spec in specs:
        operation = paths[f"/api/tools/{spec['name']}"]["post"]
        assert operation["operationId"] == spec["name"] and operation["description"] == spec["description"]
        assert operation["tags"] == ["read" if spec["annotations"]["read_only"] else "write"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert as_mcp_lists_it(body["$ref"].rsplit("/", 1)[-1], components) == spec["input_schema"], spec["name"]
        assert operation["requestBody"]["required"] == bool(spec["input_schema"].get("required"))
        assert {"200", "400", "422"} <= set(operation["responses"])
    assert len([p for p in paths if p.startswith("/api/tools/")]) == len(specs)
    assert "security" not in document  # no token on this server
