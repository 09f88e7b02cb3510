"""Every tool as a REST route on a real `evigraph serve`: its spec, a call, and what bad input gets.

On a server offering every tool of the registry (`full_server`), each tool gets a minimal call
generated from its own input schema.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tests.api.conftest import call_tool, error_of, rest_client, serving
from tests.llm.conftest import KEY
from tests.mcp.conftest import QUESTION, READ_TOOLS, HttpServer, copy_db

from evigraph.tools.registry import load_tools

pytestmark = pytest.mark.slow
SAMPLE_STRINGS = {"question": QUESTION, "query": "Harbor Lab", "answer": "Harbor Lab is in Lisbon [1]."}
ANSWERED = {
    *("status", "get_ontology", "retrieve", "search_passages", "search_entities"),
    *("check_citations", "render_citations"),
}
"""Tools whose minimal call must succeed on the sample (the others may refuse it as a tool error)."""
ONE_OF = {name: {"answer": SAMPLE_STRINGS["answer"]} for name in ("check_citations", "render_citations")}
"""Tools whose input needs one of its optional fields (the draft or the evidence): the one given."""


def minimal(schema: dict[str, Any], defs: dict[str, Any], field: str = "") -> Any:
    """The smallest value `schema` accepts: required fields only, the first choice, the lowest bound."""
    if "$ref" in schema:
        return minimal(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, field)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"]
            return minimal(options[0], defs, field)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: minimal(props[name], defs, name) for name in schema.get("required", [])}
    if kind == "array":
        return [minimal(schema.get("items", {}), defs, field) for _ in range(schema.get("minItems", 0))]
    if kind == "integer":
        return max(schema.get("minimum", 1), 1)
    if kind == "number":
        return schema.get("minimum", 0.5)
    if kind == "boolean":
        return False
    text = SAMPLE_STRINGS.get(field, "Harbor Lab")
    if "pattern" in schema:
        text = str(uuid.uuid4())  # the only patterns are ids
        assert re.fullmatch(schema["pattern"], text), f"{field}: no sample value for {schema['pattern']}"
    return text


async def test_every_registered_tool_answers_its_route(full_server: HttpServer) -> None:
    registry = load_tools()
    async with rest_client(full_server, session="every-tool") as client:
        listed = (await client.get("/api/tools")).json()
        specs = {s["name"]: s for s in listed["tools"]}
        assert set(specs) == set(registry)  # every tool (the order is the order the tool modules were imported in)
        answered = set()
        for name, tool in registry.items():
            schema = specs[name]["input_schema"]
            assert schema == tool.input.model_json_schema(), name  # the registry's schema, as MCP lists it
            args = {**minimal(schema, schema.get("$defs", {})), **ONE_OF.get(name, {})}
            Draft202012Validator(schema).validate(args)
            response = await client.post(f"/api/tools/{name}", json=args)
            assert response.status_code in (200, 400), f"{name} {args}: {response.status_code} {response.text}"
            if response.status_code == 400:
                assert response.json()["kind"] == "tool", f"{name}: {response.text}"
            else:
                assert response.json()["tool"] == name
                answered.add(name)
    assert answered >= ANSWERED
    assert KEY not in full_server.stderr()


async def test_a_result_is_the_structured_content_or_its_text(api_server: HttpServer) -> None:
    async with rest_client(api_server, session="text") as client:
        found = await call_tool(client, "retrieve", {"question": QUESTION, "top_k": 3})
        assert found["passages"][0]["n"] == 1 and "Harbor Lab" in found["passages"][0]["text"]
        text = await client.post("/api/tools/retrieve", json={"question": QUESTION}, headers={"Accept": "text/plain"})
        assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
        assert "[1]" in text.text and "Harbor Lab" in text.text
        refused = error_of(await client.post("/api/tools/read_passages", json={"passages": [9999]}), 400)
        assert refused["kind"] == "tool" and "9999" in refused["error"]


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({}, "question", "Field required"),
        ({"question": ""}, "question", "at least 1 character"),
        ({"question": QUESTION, "top_k": "many"}, "top_k", "valid integer"),
        ({"question": QUESTION, "top_k": 51}, "top_k", "less than or equal to 50"),
        ({"question": QUESTION, "colour": "red"}, "colour", "Extra inputs are not permitted"),
        ({"question": "Who? \ud800"}, "", "lone surrogate"),
    ],
)
async def test_invalid_arguments_get_422_with_each_field_and_a_hint(
    api_server: HttpServer, args: dict[str, Any], field: str, message: str
) -> None:
    async with rest_client(api_server) as client:
        sent = json.dumps(args).encode()  # ASCII with escapes: \ud800 as JSON allows it, which UTF-8 cannot carry
        body = error_of(await client.post("/api/tools/retrieve", content=sent, headers=JSON), 422)
    assert any((field in d["loc"] or not field) and message in d["msg"] for d in body["detail"]), body
    assert body["hint"].startswith("retrieve takes: question (minLength 1")


async def test_malformed_requests_are_refused_in_one_line(api_server: HttpServer) -> None:
    async with rest_client(api_server) as client:
        post = client.post
        bad_json = error_of(await post("/api/tools/status", content=b"{oops", headers=JSON), 400)
        assert "not valid JSON" in bad_json["error"]
        not_object = error_of(await post("/api/tools/status", json=[1, 2]), 422)
        assert "valid dictionary" in not_object["detail"][0]["msg"]
        form = error_of(await post("/api/tools/status", content=b"a=1", headers=FORM), 415)
        assert "application/json" in form["hint"]
        huge = b'{"question": "' + b"x" * (4 * 1024 * 1024) + b'"}'
        error_of(await post("/api/tools/retrieve", content=huge, headers=JSON), 413)
        unknown = error_of(await post("/api/tools/no_such_tool", json={}), 404)
        assert "retrieve" in unknown["available"] and "GET /api/tools" in unknown["hint"]
        assert error_of(await client.get("/api/tools/retrieve"), 405)["error"].startswith("method not allowed")
        assert error_of(await client.get("/api/nothing/here"), 404)["error"].startswith("not found")
        assert (await post("/api/tools/status")).status_code == 200  # no body: a call without arguments


JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


async def test_a_read_only_server_has_no_write_route(sample_db: Path, tmp_path: Path) -> None:
    db = copy_db(sample_db, tmp_path)
    with serving(tmp_path, "--db", str(db)) as server:
        assert "read-only (default" in server.stderr()
        async with rest_client(server) as client:
            assert {t["name"] for t in (await client.get("/api/tools")).json()["tools"]} == READ_TOOLS
            refused = error_of(await client.post("/api/tools/ingest", json={"text": "x", "document_key": "x"}), 403)
            assert "--allow-writes" in refused["hint"]
            assert (await call_tool(client, "status"))["documents"] == 3


async def test_health_and_the_web_ui_page(api_server: HttpServer) -> None:
    async with rest_client(api_server) as client:
        assert (await client.get("/api/health")).json() == {"status": "ok"}
        page = await client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<script type="module" src="js/main.js">' in page.text
        script = (await client.get("/js/main.js")).headers["content-type"]
        assert script.startswith(("text/javascript", "application/javascript"))
        assert (await client.get("/api/dbs")).json() == {"dbs": [{"name": "kb", "open": True}], "default": "kb"}
