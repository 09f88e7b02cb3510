"""Growing an ontology: what an agent or a user declares is added to the types extraction uses.

Declarations only add (types, descriptions, properties, relation patterns), so documents already
extracted never hold a label the ontology lost. The one exception is the first declaration in
an empty knowledge base: it replaces the default types, which nothing was extracted with yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from evigraph.errors import InputError
from evigraph.models import EntityType, Ontology, RelationType
from evigraph.property_types import PropertyType, check_declared


class OntologyExtension(BaseModel):
    """What a declaration changed."""

    added_entity_types: list[str] = Field(default_factory=list)
    added_relation_types: list[str] = Field(default_factory=list)
    added_patterns: list[tuple[str, str, str]] = Field(default_factory=list, description="(relation, source, target)")
    replaced_default: bool = Field(False, description="the default types were dropped: nothing was ingested yet")
    unrestricted: list[str] = Field(
        default_factory=list, description="relation types that already allow every pair, so patterns were not added"
    )
    added_properties: list[str] = Field(default_factory=list, description="'Type.property' declared by this call")

    @property
    def added(self) -> bool:
        return bool(
            self.added_entity_types or self.added_relation_types or self.added_patterns or self.added_properties
        )


def extend_ontology(
    current: Ontology, entities: Sequence[EntityType], relations: Sequence[RelationType], *, replace: bool = False
) -> tuple[Ontology, OntologyExtension]:
    """`current` with the declared types added (or, with `replace`, the declared types alone).

    A known entity type gains the new properties and keeps its description (or takes the new
    one when it had none); a known relation type gains the new patterns, except one that already
    allows every pair, which patterns would narrow.
    """
    change = OntologyExtension(replaced_default=replace)
    known = {} if replace else {e.label: e for e in current.entities}
    for e in entities:
        old = known.get(e.label)
        props = _merged_properties(e.label, old.properties if old else (), e.properties, change)
        if old is None:
            change.added_entity_types.append(e.label)
            known[e.label] = e.model_copy(update={"properties": props})
        else:
            known[e.label] = EntityType(label=e.label, description=old.description or e.description, properties=props)
    types = {} if replace else {r.type: r for r in current.relations}
    for r in relations:
        unknown = sorted({label for pair in r.patterns for label in pair if label not in known})
        if unknown:
            raise InputError(
                f"relation {r.type} names undeclared entity type(s): {', '.join(unknown)}",
                hint="declare them in entities=[...] in the same call",
            )
        old_rel = types.get(r.type)
        props = _merged_properties(r.type, old_rel.properties if old_rel else (), r.properties, change)
        if old_rel is None:
            change.added_relation_types.append(r.type)
            types[r.type] = r.model_copy(update={"properties": props})
            continue
        new = [p for p in r.patterns if p not in old_rel.patterns] if old_rel.patterns else []
        if not old_rel.patterns and r.patterns:
            change.unrestricted.append(r.type)
        change.added_patterns += [(r.type, a, b) for a, b in new]
        types[r.type] = RelationType(
            type=r.type,
            description=old_rel.description or r.description,
            patterns=(*old_rel.patterns, *new),
            properties=props,
        )
    merged = Ontology(entities=tuple(known.values()), relations=tuple(types.values()))
    return merged, change  # the caller checks it whole (`kb.properties.check_ontology`)


def _merged_properties(
    owner: str, old: Sequence[PropertyType], new: Sequence[PropertyType], change: OntologyExtension
) -> tuple[PropertyType, ...]:
    """`old` with `new` added; a property declared again keeps its type (values stored under it
    would not fit another) and its description, unless it had none."""
    check_declared(owner, new)
    merged = {p.name: p for p in old}
    for p in new:
        before = merged.get(p.name)
        if before is None:
            merged[p.name] = p
            change.added_properties.append(f"{owner}.{p.name}")
        elif before.type != p.type:
            raise InputError(
                f"{owner}.{p.name} is declared {before.type}; it cannot become {p.type} (stored values are "
                f"{before.type})",
                hint=f"keep type {before.type!r}, or declare a new property name for the {p.type} value",
            )
        elif not before.description and p.description:
            merged[p.name] = before.model_copy(update={"description": p.description})
    return tuple(merged.values())  # checked whole with the rest (`kb.properties.check_ontology`)
