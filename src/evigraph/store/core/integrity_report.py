"""What both backends' `check` share: how findings become the report's problems, and which
relations cite passages that are gone. What each backend looks for, and how it repairs, is its own
(`store/embedded/integrity.py`, `store/falkordb/integrity.py`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evigraph.integrity_records import IntegrityProblem
from evigraph.property_types import SOURCES_COLUMN, holds_properties
from evigraph.store.core.schema_names import EXTRACTION_SOURCE

EXAMPLES = 5
"""Items named in a problem; its count says how many there are."""


def relation_sources(with_properties: bool = True) -> str:
    """The query `dangling_relations` reads; `with_properties` False for a file from before
    `_property_sources` (read-only, so it cannot gain the column), where no relation holds any."""
    props = f"x.{SOURCES_COLUMN}" if with_properties else "NULL"
    return f"""MATCH (a:Entity)-[x:RELATES]->(b:Entity)
           RETURN x.id AS id, a.id AS s, b.id AS d, x.source_chunks AS src, x._source AS source, {props} AS props"""


def dangling_relations(
    rows: Iterable[Mapping[str, Any]], exists: Callable[[str], bool], sources: Callable[[Any], list[str]]
) -> list[dict[str, Any]]:
    """The relations of `rows` (read by `relation_sources`) citing a passage that does not `exist`,
    with the sources that remain and whether an agent stands by each (`owned`: it wrote the
    relation or gave it properties), which keeps it when none remain; `sources` decodes the stored list."""
    out = []
    for r in rows:
        src = sources(r["src"])
        kept = [c for c in src if exists(c)]
        if len(kept) != len(src):
            owned = r["source"] != EXTRACTION_SOURCE or holds_properties(r["props"])
            out.append({"id": r["id"], "s": r["s"], "d": r["d"], "src": kept, "owned": owned})
    return out


class Problems:
    """The findings as the report shows them: one entry per kind of damage, in the order added."""

    def __init__(self) -> None:
        self.found: list[IntegrityProblem] = []

    def add(self, kind: str, items: Sequence[str], detail: str, repairable: bool = True) -> None:
        if items:
            self.found.append(
                IntegrityProblem(
                    kind=kind, count=len(items), detail=detail, examples=list(items[:EXAMPLES]), repairable=repairable
                )
            )

    def missing_mark(self, missing: bool) -> None:
        if missing:
            self.add("missing_schema_mark", ["schema_version"], "the evigraph schema mark is missing or wrong")

    def passages(self, stray: Sequence[str], miscounted: Sequence[str]) -> None:
        self.add("stray_chunks", stray, "passages not part of their document's current version")
        self.add(
            "miscounted_documents",
            miscounted,
            "documents whose stored passage count differs from their passages; repair marks them changed, "
            "so the next ingest of their files rewrites them",
            repairable=False,
        )

    def dangling(self, relations: Sequence[Mapping[str, Any]]) -> None:
        self.add(
            "dangling_relation_sources", [r["id"] for r in relations], "relations citing passages that no longer exist"
        )
