"""What a knowledge base declares and holds, for agents writing Cypher, and read-only Cypher itself.

The store guards and bounds every query and speaks its own dialect (its guide, its table
names); here the store's answers are joined with the ontology, and an engine error gets a hint
listing the tables and labels that do exist, which is what a first wrong query usually lacks.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evigraph.errors import CypherRefused, QueryAborted, QueryTimeout, ReadOnlyQueryError, UnknownLabel
from evigraph.models import Ontology, StoreCounts, TableInfo
from evigraph.property_types import PropertyType
from evigraph.store.base import GraphStore

CYPHER_TIMEOUT_MS = 10_000
CYPHER_HINT = "cypher_query only reads: use MATCH ... RETURN (call get_ontology for labels and properties)"


class EntityTypeView(BaseModel):
    label: str
    description: str = ""
    properties: list[PropertyType] = Field(default_factory=list, description="declared properties, Cypher: e.<name>")
    count: int = 0


class RelationTypeView(BaseModel):
    label: str
    description: str = ""
    patterns: list[tuple[str, str]] = Field(default_factory=list, description="empty: any pair of labels")
    properties: list[PropertyType] = Field(default_factory=list, description="declared properties, Cypher: r.<name>")
    count: int = 0


class OntologyOverview(BaseModel):
    """The declared types with how many of each are stored, and the store's schema for Cypher."""

    entity_types: list[EntityTypeView]
    relation_types: list[RelationTypeView]
    tables: list[TableInfo]
    cypher_guide: str


async def ontology_overview(store: GraphStore, ontology: Ontology) -> OntologyOverview:
    counts = await store.counts()
    entity_types = [
        EntityTypeView(
            label=e.label, description=e.description, properties=list(e.properties), count=counts.labels.get(e.label, 0)
        )
        for e in ontology.entities
    ]
    declared = {e.label for e in ontology.entities}
    entity_types += [
        EntityTypeView(label=label, description="(stored, not declared)", count=n)
        for label, n in counts.labels.items()
        if label not in declared
    ]
    relation_types = [
        RelationTypeView(
            label=r.type,
            description=r.description,
            patterns=[(a, b) for a, b in r.patterns],
            properties=list(r.properties),
            count=counts.relation_types.get(r.type, 0),
        )
        for r in ontology.relations
    ]
    return OntologyOverview(
        entity_types=entity_types,
        relation_types=relation_types,
        tables=await store.schema_tables(),
        cypher_guide=store.cypher_guide(),
    )


class CypherRows(BaseModel):
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    truncated: bool = False


async def cypher_query(
    store: GraphStore, query: str, params: dict[str, Any], limit: int, deadline_s: float | None = None
) -> CypherRows:
    """Up to `limit` rows of read-only Cypher, stopped by the engine at its time limit or at the
    read deadline `deadline_s`, the sooner (the engine, unlike a cancelled wait, stops its work);
    engine errors come back with a hint naming the schema."""
    timeout_ms = CYPHER_TIMEOUT_MS if deadline_s is None else max(1, min(CYPHER_TIMEOUT_MS, int(deadline_s * 1000)))
    try:
        rows = await store.cypher_query(query, params, limit=limit + 1, timeout_ms=timeout_ms)
    except UnknownLabel as exc:
        raise UnknownLabel(exc.message, hint=f"{await _schema_hint(store)}; {exc.hint}") from exc
    except QueryTimeout as exc:
        hint = exc.hint or CYPHER_HINT
        if timeout_ms < CYPHER_TIMEOUT_MS:
            hint += f"; reads stop at the operator's read_deadline_seconds, {timeout_ms / 1000:g} s here"
        raise QueryTimeout(exc.message, hint=hint) from exc
    except (CypherRefused, QueryAborted) as exc:
        raise type(exc)(exc.message, hint=exc.hint or CYPHER_HINT) from exc
    except ReadOnlyQueryError as exc:  # the store's own hint first (a quoting rule, a crash), then the schema
        schema = await _schema_hint(store)
        raise ReadOnlyQueryError(exc.message, hint=f"{exc.hint}; {schema}" if exc.hint else schema) from exc
    return CypherRows(
        columns=list(rows[0]) if rows else [],
        rows=rows[:limit],
        truncated=len(rows) > limit or bool(getattr(rows, "truncated", False)),
    )


async def _schema_hint(store: GraphStore) -> str:
    tables = [t.name for t in await store.schema_tables()]
    counts: StoreCounts = await store.counts()
    labels = list(counts.labels)
    return (
        f"tables: {', '.join(tables)}; entity labels (values of e.label): {', '.join(labels[:30]) or 'none'}; "
        "see get_ontology"
    )
