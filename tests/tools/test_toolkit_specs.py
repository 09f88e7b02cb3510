"""`tool_specs()`: one spec per offered tool, JSON Schemas that agree with validation, annotations,
and what read-only, `include`, `files_root` and `finalize_policy` take away."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tests.tools.conftest import RULES_PLAN, write_corpus

from evigraph import KnowledgeBase, ReadOnlyViolation, ToolError, Toolkit
from evigraph.tools.definitions import ToolSpec
from evigraph.tools.registry import load_tools, trace_tool_names
from evigraph.tools.results import ToolResult

READ_TOOLS = {
    "status",
    "get_ontology",
    "retrieve",
    "search_passages",
    "read_passages",
    "navigate_document",
    "search_entities",
    "explore_relationships",
    "search_themes",
    "cypher_query",
    "get_context",
    "source_status",
    "check_citations",
    "render_citations",
}
WRITE_TOOLS = {
    "set_ontology",
    "ingest",
    "finalize",
    "preview_files",
    "upsert_entities",
    "upsert_relations",
    "delete_document",
    "ingest_code",
}
DESTRUCTIVE = WRITE_TOOLS - {"preview_files"}

# Arguments of the shapes the toolkit tests send, at least one per tool.
SENT: dict[str, list[dict[str, Any]]] = {
    "status": [{}],
    "get_ontology": [{}],
    "retrieve": [
        {"question": "Who founded Acme Robotics Corp?"},
        {"question": "Who founded Acme?", "paths": ["passages", "links"], "top_k": 50, "expand_hops": 5},
    ],
    "search_passages": [{"query": "Hawk drone", "mode": "lexical", "limit": 2}, {"query": "Hawk", "mode": "semantic"}],
    "read_passages": [{"passages": [3, "passage:abc:1:0", "abc:1:0"], "max_chars": 40}],
    "navigate_document": [{"passage": 4, "relation": "table_context", "limit": 2, "max_chars": 100}],
    "search_entities": [{"query": "Ingrid Halvorsen", "labels": ["Person"], "mode": "lexical", "limit": 5}],
    "explore_relationships": [
        {"entity": "person:ingrid halvorsen", "depth": 2, "relation_types": ["RELATED_TO"], "max_edges": 1},
        {"entity": 7, "max_nodes": 3},
    ],
    "search_themes": [{"query": "Acme Robotics Corp", "limit": 10, "support_limit": 1}],
    "cypher_query": [
        {"query": "MATCH (e:Entity) WHERE e.label = $l RETURN e.name", "params": {"l": "Person"}, "limit": 3}
    ],
    "get_context": [{"evidence": [1, 2, 9999], "max_tokens": 120}],
    "source_status": [{"document_key": "file:acme.md"}],
    "check_citations": [
        {"answer": "Acme Robotics Corp builds warehouse machines [1-3]."},
        {"evidence": [1, "passage:abc:1:0", "[2]"], "strict": True},
    ],
    "render_citations": [{"answer": "Acme builds machines [1, 2].", "evidence": ["entity:x"], "strict": False}],
    "set_ontology": [
        {
            "entities": [{"label": "Person", "properties": ["role"]}, {"label": "Städte", "description": "cities"}],
            "relations": [{"label": "WORKS_FOR", "patterns": [["Person", "Organization"]]}],
        }
    ],
    "ingest": [
        {"text": "Dr. Ingrid Halvorsen works for Acme Robotics Corp.", "document_key": "note", "title": "Note"},
        {"files": ["**/*.md", "notes/*.txt"], "plan": RULES_PLAN, "reextract": True},
    ],
    "finalize": [{}],
    "preview_files": [{}, {"offset": 8}],
    "upsert_entities": [{"entities": [{"name": "Sigrid Dahl", "label": "Person", "aliases": ["S. Dahl"]}]}],
    "upsert_relations": [
        {
            "relations": [
                {
                    "source": {"name": "Sigrid Dahl", "label": "Person"},
                    "type": "WORKS_FOR",
                    "target": {"name": "Acme Robotics Corp", "label": "Organization"},
                    "fact": "Sigrid Dahl works for Acme Robotics Corp.",
                    "evidence": [3, "passage:abc:1:0"],
                    "confidence": 0.9,
                }
            ]
        }
    ],
    "delete_document": [{"document_key": "note"}],
    "ingest_code": [{"paths": ["client"]}, {"paths": ["client", "web"], "calls": False, "max_file_kb": 64}],
}

# Arguments both the schema and the tool refuse: bounds and unknown fields, nested ones included.
REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("retrieve", {"question": "x", "top_k": 0}),
    ("retrieve", {"question": "x", "top_k": 51}),
    ("retrieve", {"question": "x", "expand_hops": 6}),
    ("retrieve", {"question": "x", "paths": []}),
    ("retrieve", {"question": "x", "bogus": 1}),
    ("search_passages", {"query": "x", "limit": 0}),
    ("search_passages", {"query": "x" * 1001}),
    ("read_passages", {"passages": list(range(21))}),
    ("navigate_document", {"passage": 1, "relation": "cousin"}),
    ("explore_relationships", {"entity": "x", "max_edges": 201}),
    ("search_themes", {"query": "x", "limit": 11}),
    ("cypher_query", {"query": "MATCH (n) RETURN n", "limit": 0}),
    ("get_context", {"evidence": []}),
    ("check_citations", {"answer": ""}),
    ("check_citations", {"evidence": [0]}),
    ("render_citations", {"evidence": list(range(1, 22))}),
    ("status", {"verbose": True}),
    ("set_ontology", {"entities": [{"label": "Person", "colour": "red"}]}),
    ("set_ontology", {"relations": [{"label": "R", "patterns": [["A", "B", "C"]]}]}),
    ("ingest", {"files": [], "plan": RULES_PLAN}),
    ("ingest", {"files": ["a.md"], "plan": [{"match": "*", "chunker": "fixed", "budget": 9}]}),
    ("preview_files", {"offset": -1}),
    ("upsert_entities", {"entities": []}),
    ("upsert_relations", {"relations": [{"source": {"name": "a", "label": "A", "id": "x"}}]}),
    ("delete_document", {"document_key": "x", "force": True}),
    ("ingest_code", {"paths": []}),
    ("ingest_code", {"paths": ["src"], "max_file_kb": 0}),
]


@pytest.fixture
async def full(tmp_path: Path) -> AsyncIterator[Toolkit]:
    """A toolkit offering every tool; its knowledge base is created only if a test writes."""
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        yield Toolkit(kb, files_root=write_corpus(tmp_path / "root"))


def specs_by_name(tk: Toolkit) -> dict[str, ToolSpec]:
    specs = tk.tool_specs()
    assert len({s.name for s in specs}) == len(specs)
    return {s.name: s for s in specs}


def schema_errors(spec: ToolSpec, args: dict[str, Any]) -> list[str]:
    return [e.message for e in Draft202012Validator(spec.input_schema).iter_errors(args)]


def test_specs_cover_every_tool(full: Toolkit) -> None:
    specs = specs_by_name(full)
    # `answer` is offered only with an LLM (tested in tests/llm/test_answer.py), the task tools only with a
    # project and an agent (tests/tools/test_trace_tools.py)
    offered = set(load_tools()) - {"answer"} - trace_tool_names()
    assert set(specs) == READ_TOOLS | WRITE_TOOLS == offered == set(SENT)
    for spec in specs.values():
        assert len(spec.description) > 40, spec.name
        Draft202012Validator.check_schema(spec.input_schema)
        assert spec.input_schema["type"] == "object"


def test_every_object_in_every_schema_refuses_unknown_fields(full: Toolkit) -> None:
    for spec in full.tool_specs():
        objects = [spec.input_schema, *spec.input_schema.get("$defs", {}).values()]
        for schema in objects:
            assert schema.get("additionalProperties") is False, f"{spec.name}: {schema.get('title')}"


@pytest.mark.parametrize(("tool", "args"), [(t, a) for t, many in SENT.items() for a in many])
def test_schemas_accept_the_arguments_tests_send(full: Toolkit, tool: str, args: dict[str, Any]) -> None:
    spec = specs_by_name(full)[tool]
    assert schema_errors(spec, args) == []
    load_tools()[tool].input.model_validate(args)  # and the tool's own validation agrees
    assert schema_errors(spec, {**args, "bogus": 1}), "an unknown field must fail the schema"


@pytest.mark.parametrize(("tool", "args"), REFUSED)
async def test_schema_and_call_both_refuse_bounds_and_unknown_fields(
    full: Toolkit, tool: str, args: dict[str, Any]
) -> None:
    assert schema_errors(specs_by_name(full)[tool], args)
    with pytest.raises(ToolError) as err:
        await full.call(tool, args)
    assert err.value.message.startswith(f"invalid arguments for {tool}: ")
    assert err.value.hint.startswith(f"{tool} takes: ")


async def test_calls_with_sent_arguments_pass_validation(
    full: Toolkit, schema_checked_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    """Each SENT argument set gets past validation when really called (it may fail later, for lack of data)."""
    await full.kb.ingest(text="Dr. Ingrid Halvorsen works for Acme Robotics Corp.", key="note")
    for tool, many in SENT.items():
        for args in many:
            try:
                result = await full.call(tool, args)
            except ToolError as exc:
                assert not exc.message.startswith("invalid arguments"), exc.message
            else:
                assert isinstance(result, ToolResult)
    assert len(schema_checked_calls) == sum(len(a) for a in SENT.values())


def test_annotations(full: Toolkit) -> None:
    for name, spec in specs_by_name(full).items():
        a = spec.annotations
        if name in READ_TOOLS:
            assert a.read_only and not a.destructive, name
        else:
            assert not a.read_only, name
        assert a.destructive == (name in DESTRUCTIVE), name
        assert not a.open_world


async def test_read_only_toolkit_lists_no_write_tool_and_refuses_them(full: Toolkit, tmp_path: Path) -> None:
    ro = Toolkit(full.kb, read_only=True, files_root=tmp_path / "root")
    names = set(specs_by_name(ro))
    assert names == READ_TOOLS
    assert all(s.annotations.read_only for s in ro.tool_specs())
    for tool in sorted(WRITE_TOOLS):
        with pytest.raises(ReadOnlyViolation) as err:
            await ro.call(tool, SENT[tool][0])
        assert tool in err.value.message and err.value.hint
    with pytest.raises(ReadOnlyViolation):
        await ro.ingest(text="Forged text.", document_key="forged")  # the per-tool method too
    assert not (tmp_path / "kb.db").exists(), "a refused write must not create the knowledge base"
    assert isinstance(ReadOnlyViolation("x"), ToolError)


async def test_new_session_keeps_the_toolkit_options(full: Toolkit, tmp_path: Path) -> None:
    ro = Toolkit(full.kb, read_only=True).new_session()
    assert set(specs_by_name(ro)) == READ_TOOLS
    with pytest.raises(ReadOnlyViolation):
        await ro.call("delete_document", {"document_key": "note"})


async def test_include_limits_the_tools(full: Toolkit) -> None:
    tk = Toolkit(full.kb, include=["retrieve", "check_citations", "ingest"])
    assert set(specs_by_name(tk)) == {"retrieve", "check_citations", "ingest"}
    with pytest.raises(ToolError, match="not offered") as err:
        await tk.call("status", {})
    assert "retrieve" in err.value.hint
    with pytest.raises(ToolError, match="unknown tool"):
        Toolkit(full.kb, include=["retrieve", "fly"])


def test_preview_needs_a_files_root_and_finalize_a_manual_policy(full: Toolkit) -> None:
    bare = specs_by_name(Toolkit(full.kb))
    assert "preview_files" not in bare and "finalize" in bare
    assert "files" in bare["ingest"].input_schema["properties"]
    assert "plan:" not in bare["ingest"].description  # plan options are described only with a files root
    described = specs_by_name(full)["ingest"].description
    for option in ("structural", "sentence", "fixed", "rules", "exact", "files of more than 1000 passages"):
        assert option in described
    on_write = specs_by_name(Toolkit(full.kb, finalize_policy="on_write"))
    assert "finalize" not in on_write


def test_bad_toolkit_options_are_refused(full: Toolkit) -> None:
    with pytest.raises(ToolError, match="finalize_policy"):
        Toolkit(full.kb, finalize_policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="max_file_bytes"):
        Toolkit(full.kb, max_file_bytes=0)


async def test_unknown_tool_is_refused_with_the_offered_list(full: Toolkit) -> None:
    with pytest.raises(ToolError) as err:
        await full.call("drop_everything", {})
    assert err.value.message == "unknown tool 'drop_everything'"
    for name in READ_TOOLS | WRITE_TOOLS:
        assert name in err.value.hint
    with pytest.raises(AttributeError):
        full.drop_everything  # noqa: B018 - no method appears for an unknown tool
