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
from evigraph.property_types import (
    OWNERS,
    Owner,
    PropertyKind,
    PropertyOwner,
    PropertyValue,
    check_declared,
    check_values,
    column_types,
)
from evigraph.store.base import GraphStore

PropertyWrites = list[tuple[PropertyOwner, dict[str, PropertyValue]]]


Columns = dict[Owner, dict[str, PropertyKind]]


def check_ontology(ontology: Ontology) -> Columns:
    """Each owner's property columns, once every type's declaration is within the limits and each
    name has one type across the types sharing its table; whichever way an ontology arrives
    (`set_ontology`, `extend_ontology`), it passes here before anything is stored."""
    out: Columns = {}
    for owner in OWNERS:
        declared = ontology.declared_properties(owner)
        for type_name, properties in declared.items():
            check_declared(type_name, properties)
        out[owner] = column_types(owner, declared.items())
    return out


async def make_columns(store: GraphStore, columns: Columns) -> None:
    """Every declared property storable (the embedded engine's columns), before a value is written."""
    for owner, wanted in columns.items():
        await store.add_property_columns(owner, wanted)


async def refuse_lost_values(store: GraphStore, old: Ontology, new: Ontology) -> None:
    """A replacing ontology may leave out a type's property, or give it another type, only while
    nothing of that type holds a value of it: the values would stay in the store, unseen in
    results and unchecked by any declaration, or of a type the declaration no longer says."""
    for owner in OWNERS:
        after = {(t, p.name): p.type for t, ps in new.declared_properties(owner).items() for p in ps}
        before = {(t, p.name): p.type for t, ps in old.declared_properties(owner).items() for p in ps}
        at_risk = {key: kind for key, kind in before.items() if after.get(key) != kind}
        held: dict[tuple[str, str], int] = {}
        for type_name in sorted({t for t, _ in at_risk}):
            names = sorted(n for t, n in at_risk if t == type_name)
            counts = await store.count_property_values(owner, names, types=[type_name])
            held.update({(type_name, n): c for n, c in counts.items() if c})
        gone = [f"{n} ({c} {_plural(owner, c)}) on {t}" for (t, n), c in held.items() if (t, n) not in after]
        if gone:
            raise InputError(
                f"the new ontology leaves out {owner} properties that hold values: {', '.join(gone)}",
                hint="declare them in the new ontology too (kb.extend_ontology adds without leaving anything out)",
            )
        if changed := [
            f"{n} ({at_risk[t, n]}, {c} {_plural(owner, c)}) on {t} cannot become {after[t, n]}"
            for (t, n), c in held.items()
        ]:
            raise InputError(
                f"the new ontology changes the type of {owner} properties that hold values: {', '.join(changed)}",
                hint="keep each one's type, or declare a new property name for values of the new type",
            )


def _plural(owner: Owner, count: int) -> str:
    return owner if count == 1 else f"{owner}s"


async def redirected(
    store: GraphStore, writes: PropertyWrites, relations: Sequence[ExtractedRelation] = ()
) -> PropertyWrites:
    """`writes` re-pointed as the store's upsert re-points what it writes: an entity merged away
    to its survivor, a relation (one of `relations`) to the one between the survivors, whose id
    follows its ends."""
    found = await store.entity_redirects()
    if not found:
        return writes

    def to(eid: str) -> str:
        return found.get(eid, eid)

    moved = {r.id: r.model_copy(update={"source": to(r.source), "target": to(r.target)}) for r in relations}
    out: PropertyWrites = []
    for o, values in writes:
        if o.owner == "entity":
            o = o.model_copy(update={"id": to(o.id)})
        elif (r := moved.get(o.id)) is not None:
            o = PropertyOwner(owner="relation", id=r.id, source=r.source, target=r.target)
        out.append((o, values))
    return out


async def write_values(store: GraphStore, writes: PropertyWrites, source: str) -> None:
    """Write `writes`; an owner that does not exist (a relation whose end was never written) is
    refused, not passed over, as its values would be lost unseen."""
    if missing := set(await store.write_properties(writes, source)):
        named = [o.id if o.owner == "entity" else f"{o.source} -> {o.target}" for o, _ in writes if o.id in missing]
        raise InputError(
            f"properties not written: no {'entity or relation' if len(named) == 1 else 'entities or relations'} "
            f"{', '.join(named[:5])}",
            hint="write the entities first (upsert_entities); a relation's source and target must exist",
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
    """Fill in the declared properties the items hold, and who set each, in place (one store read:
    this runs on every retrieve)."""
    names = {o: ontology.property_names(o) for o in OWNERS}
    owners = [PropertyOwner(owner="entity", id=e.id) for e in entities] if names["entity"] else []
    if names["relation"]:
        owners += [
            PropertyOwner(owner="relation", id=r.id, source=r.ends[0], target=r.ends[1]) for r in relations if r.ends
        ]
    if not owners:
        return
    found = await store.read_properties(owners, sorted(names["entity"] | names["relation"]))
    kinds: tuple[tuple[Owner, Sequence[EntityItem | RelationItem]], ...] = (
        ("entity", entities),
        ("relation", relations),
    )
    for owner, items in kinds:
        for item in items:
            if (held := found.get(item.id)) is not None:
                values = {n: v for n, v in held.values.items() if n in names[owner]}
                item.properties = values
                item.property_sources = {n: w for n, w in held.sources.items() if n in values}
