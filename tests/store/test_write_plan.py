"""The backend-neutral write plan: the document versions a plan rests on accumulate, never drop."""

from __future__ import annotations

import pytest

from evigraph.errors import StoreError
from evigraph.store.core.write_plan import WritePlan


def refuse() -> None:
    raise StoreError("a document changed under the decision", hint="read it again")


def test_required_versions_add_up() -> None:
    plan = WritePlan()
    plan.require_versions({"a": 1}, refuse)
    plan.require_versions({"b": 2, "a": 1}, refuse)
    assert plan.versions == {"a": 1, "b": 2}  # the first check's guard is still there


def test_one_document_at_two_versions_is_refused_at_once() -> None:
    plan = WritePlan()
    plan.require_versions({"a": 1}, refuse)
    with pytest.raises(StoreError, match="changed under"):
        plan.require_versions({"a": 2}, refuse)
    assert plan.versions == {"a": 1}


def test_the_embedded_store_knows_the_column_types_of_every_trace_table() -> None:
    """Its plan statements cast each value by the type its DDL declares, read from the DDL text:
    a table the reading misses would fail at its first write, not here."""
    from evigraph.store.embedded.traces import TRACE_TABLES, _column_types

    types = _column_types()
    assert set(TRACE_TABLES) <= set(types)
    assert all(columns.get("id") == "STRING" for columns in types.values())
