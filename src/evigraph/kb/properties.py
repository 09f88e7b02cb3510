"""Declared properties between the ontology and the store: checking writes, keeping values, showing them.

The ontology says what each type may hold; the store keeps values where Cypher reads them. Here
the two meet: a write is checked whole against the declaration before anything is stored, a
declaration makes its columns before anything is written to them, a declaration that would drop
a property still holding values is refused (saying how many), and read results get the values
and who set them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.errors import InputError
from evigraph.evidence.items import EntityItem, RelationItem
from evigraph.models import ExtractedEntity, ExtractedRelation, Ontology
from evigraph.property_types import OWNERS, Owner, PropertyOwner, PropertyValue, check_values, column_types
from evigraph.store.base import GraphStore

PropertyWrites = list[tuple[PropertyOwner, dict[str, PropertyValue]]]


async def make_columns(store: GraphStore, ontology: Ontology) -> None:
    """Every declared property storable (the embedded engine's columns), before a value is written."""
    for owner in OWNERS:
        columns = column_types(owner, ontology.declared_properties(owner).items())
        await store.add_property_columns(owner, columns)


async def refuse_dropped(store: GraphStore, old: Ontology, new: Ontology) -> None:
    """A replacing ontology may leave out a property only while nothing holds a value of it: the
    values would stay in the store, unseen in results and unchecked by any declaration."""
    for owner in OWNERS:
        kept = {p.name for props in new.declared_properties(owner).values() for p in props}
        left = sorted({p.name for props in old.declared_properties(owner).values() for p in props} - kept)
        held = {n: c for n, c in (await store.count_property_values(owner, left)).items() if c} if left else {}
        if held:
            what = ", ".join(f"{n} ({c} {owner}{'s' if c != 1 else ''})" for n, c in held.items())
            raise InputError(
                f"the new ontology leaves out {owner} properties that hold values: {what}",
                hint="declare them in the new ontology too (kb.extend_ontology adds without leaving anything out)",
            )


def entity_writes(
    ontology: Ontology, entities: Sequence[ExtractedEntity], properties: Mapping[str, Mapping[str, Any]]
) -> PropertyWrites:
    """Each entity's properties (`properties` by entity id) checked against its type's declaration."""
    owners = {e.id: (e.label, f"{e.label} {e.name!r}", PropertyOwner(owner="entity", id=e.id)) for e in entities}
    return _checked(ontology, "entity", owners, properties)


def relation_writes(
    ontology: Ontology, relations: Sequence[ExtractedRelation], properties: Mapping[str, Mapping[str, Any]]
) -> PropertyWrites:
    """Each relation's properties (`properties` by relation id) checked against its type's declaration."""
    owners = {
        r.id: (
            r.type,
            f"{r.type} {r.source} -> {r.target}",
            PropertyOwner(owner="relation", id=r.id, source=r.source, target=r.target),
        )
        for r in relations
    }
    return _checked(ontology, "relation", owners, properties)


def _checked(
    ontology: Ontology,
    owner: Owner,
    owners: Mapping[str, tuple[str, str, PropertyOwner]],
    properties: Mapping[str, Mapping[str, Any]],
) -> PropertyWrites:
    """`owners`: id -> (its type, how an error names it, where its values go)."""
    if unknown := sorted(set(properties) - set(owners)):
        what = "entities" if owner == "entity" else "relations"
        raise InputError(f"properties given for {what} not written: {', '.join(unknown[:5])}", hint=_IDS)
    declared = ontology.declared_properties(owner)
    out: PropertyWrites = []
    for oid, values in properties.items():
        kind, named, where = owners[oid]
        if checked := check_values(named, declared.get(kind, ()), values):
            out.append((where, checked))
    return out


_IDS = "key properties by the id of an entity or relation in the same call (ExtractedEntity.id, ExtractedRelation.id)"


async def show_properties(
    store: GraphStore, ontology: Ontology, entities: Sequence[EntityItem], relations: Sequence[RelationItem]
) -> None:
    """Fill in the declared properties the items hold, and who set each, in place."""
    names = {o: sorted({p.name for ps in ontology.declared_properties(o).values() for p in ps}) for o in OWNERS}
    owners = [PropertyOwner(owner="entity", id=e.id) for e in entities] if names["entity"] else []
    found = await store.read_properties(owners, names["entity"]) if owners else {}
    for e in entities:
        if (held := found.get(e.id)) is not None:
            e.properties, e.property_sources = held.values, held.sources
    ends = [r for r in relations if r.ends is not None]
    rel_owners = [PropertyOwner(owner="relation", id=r.id, source=r.ends[0], target=r.ends[1]) for r in ends if r.ends]
    found = await store.read_properties(rel_owners, names["relation"]) if rel_owners and names["relation"] else {}
    for r in relations:
        if (held := found.get(r.id)) is not None:
            r.properties, r.property_sources = held.values, held.sources
