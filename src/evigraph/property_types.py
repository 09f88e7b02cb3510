"""Declared properties: what a user may store on an entity or relation beyond its name and fact.

A property is declared per entity type or relation type in the ontology, typed and bounded, so
what an agent writes can be checked before anything is stored and every value is something a
Cypher query can compare. The knowledge graph holds one `Entity` table and one `RELATES`
relationship for every type, so a property name is one column there: two entity types may share
a name only with one type (`column_types`), and a declared type never changes, since values
stored under it would not fit another.

Dates are kept as ISO-8601 text (`YYYY-MM-DD`) on both stores: FalkorDB has no date type every
server version reads back, text in that form sorts and compares as the dates do, and one query
then works on either store (`WHERE e.founded >= '1990-01-01'`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evigraph.errors import InputError

MAX_PROPERTIES = 30
"""Properties one entity or relation type may declare: enough for a record, few enough that a
result line stays readable and the table stays narrow."""
MAX_STRING_CHARS = 2000
"""Characters of one string value: a property is a fact, not a document (ingest those)."""
MAX_LIST_ITEMS = 50
MAX_LIST_ITEM_CHARS = 200
MAX_NAME_CHARS = 40

PropertyValue = str | int | float | bool | list[str] | None
"""What a property holds once checked; None (in a write) removes the value."""

Owner = Literal["entity", "relation"]
"""What a property belongs to: an entity (its `Entity` row) or a relation (its `RELATES` edge)."""
OWNERS: tuple[Owner, ...] = ("entity", "relation")
T = TypeVar("T")


class PropertyKind(StrEnum):
    string = "string"
    integer = "integer"
    number = "number"
    boolean = "boolean"
    date = "date"
    string_list = "string_list"


KindName = Literal["string", "integer", "number", "boolean", "date", "string_list"]
"""`PropertyKind` as a declaration spells it (a literal, so a tool schema holds it inline)."""

ENGINE_TYPES: dict[PropertyKind, str] = {
    PropertyKind.string: "STRING",
    PropertyKind.integer: "INT64",
    PropertyKind.number: "DOUBLE",
    PropertyKind.boolean: "BOOL",
    PropertyKind.date: "STRING",
    PropertyKind.string_list: "STRING[]",
}
"""The embedded engine's column type of each kind (see the module docstring for dates)."""

BUILTIN_COLUMNS: dict[Owner, frozenset[str]] = {
    "entity": frozenset(
        {"id", "name", "label", "description", "descriptions", "aliases", "search_text", "embedding", "table", "live"}
    ),
    "relation": frozenset({"id", "type", "fact", "confidence", "source_chunks", "table", "live"}),
}
"""What an entity or relation holds already; a property cannot take one of these names."""

TYPE_FIELDS: dict[Owner, str] = {"entity": "label", "relation": "type"}
"""Where an entity's or relation's type is stored: what its properties are declared on."""

SOURCES_COLUMN = "_property_sources"
"""Provenance of each property value (JSON: name -> who set it), beside `_source`, the entity's own."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class PropertyType(BaseModel):
    """One declared property: its name (a column in Cypher), its type and what it means."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="lower_snake_case, e.g. founded_year; queried in Cypher as e.founded_year",
    )
    type: KindName = Field("string", description="string, integer, number, boolean, date ('YYYY-MM-DD'), string_list")
    description: str = Field("", max_length=500)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(
                f"property name {name!r} must be lower_snake_case: a letter a-z, then letters a-z, digits and '_' "
                "(e.g. founded_year)"
            )
        if name in BUILTIN_COLUMNS["entity"] | BUILTIN_COLUMNS["relation"]:
            raise ValueError(f"property name {name!r} is one of evigraph's own columns; choose another (e.g. {name}_x)")
        return name


def declared_columns(owner: Owner, columns: Iterable[str]) -> list[str]:
    """Of a table's (or a FalkorDB edge's) property names, those a declaration added: not evigraph's
    own, not internal (`_`-prefixed) and not a vector."""
    return sorted(n for n in columns if n not in BUILTIN_COLUMNS[owner] and not n.startswith("_") and n != "embedding")


def merged_sources(*held: str | None) -> str | None:
    """`_property_sources` values united, the first naming a property winning (the row merged into
    keeps what it holds); None when none names any."""
    out: dict[str, str] = {}
    for sources in reversed(held):
        out.update(json.loads(sources) if sources and holds_properties(sources) else {})
    return json.dumps(out, sort_keys=True) if out else None


def holds_properties(sources: str | None) -> bool:
    """Whether a `_property_sources` value names any property: an entity or relation an agent gave
    properties stands on the agent's word, so neither ingest nor `check --repair` deletes it when
    no passage names it. `holds_no_properties` is the same rule in Cypher; keep the two alike."""
    return sources not in (None, "", "{}")


def holds_no_properties(var: str) -> str:
    """`not holds_properties` as a Cypher condition on `var` (an entity or relation), for deletes
    that decide in the query; both stores read it."""
    return f"coalesce({var}.{SOURCES_COLUMN}, '') IN ['', '{{}}']"


def legacy_properties(value: Any) -> Any:
    """Before properties were typed, a type listed bare names (never stored values): each plain
    name becomes a string property; a name no column could take is left out, as it held nothing."""
    if not isinstance(value, list | tuple):
        return value
    out = []
    for item in value:
        if isinstance(item, str):
            if _NAME.match(item) and item not in BUILTIN_COLUMNS["entity"] | BUILTIN_COLUMNS["relation"]:
                out.append({"name": item})
            continue
        out.append(item)
    return out


def check_declared(owner: str, properties: Sequence[PropertyType]) -> None:
    """One type's declaration: bounded, and each name once."""
    if len(properties) > MAX_PROPERTIES:
        raise InputError(
            f"{owner} declares {len(properties)} properties; at most {MAX_PROPERTIES} are allowed",
            hint="keep the properties a query filters or a reader needs; put the rest in the description",
        )
    names = [p.name for p in properties]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise InputError(f"{owner} declares {', '.join(twice)} more than once", hint="declare each property once")


def column_types(owner: Owner, declared: Iterable[tuple[str, Sequence[PropertyType]]]) -> dict[str, PropertyKind]:
    """Each property name's one type across all types of `owner` (they share a table), or the conflict."""
    seen: dict[str, tuple[PropertyKind, str]] = {}
    for type_name, properties in declared:
        for p in properties:
            first = seen.setdefault(p.name, (PropertyKind(p.type), type_name))
            if first[0] != p.type:
                raise InputError(
                    f"property {p.name!r} is {first[0]} on {first[1]} but {p.type} on {type_name}; every {owner} "
                    "type's property of one name is one column, of one type",
                    hint=f"declare it as {first[0]} on {type_name} too, or give it another name",
                )
    return {name: kind for name, (kind, _) in seen.items()}


def check_values(owner: str, declared: Sequence[PropertyType], values: Mapping[str, Any]) -> dict[str, PropertyValue]:
    """`values` checked against what `owner` (e.g. "Person 'Ada Lovelace'") declares, each in the
    form it is stored in; an error names the property and the fix."""
    kinds = {p.name: PropertyKind(p.type) for p in declared}
    out: dict[str, PropertyValue] = {}
    for name, value in values.items():
        kind = kinds.get(name)
        if kind is None:
            known = ", ".join(sorted(kinds)) or "none"
            raise InputError(
                f"{owner}: property {name!r} is not declared (declared: {known})",
                hint=f"declare it first: set_ontology with properties=[{{name: {name!r}, type: ...}}] on its type",
            )
        out[name] = None if value is None else _checked(owner, name, kind, value)
    return out


def _checked(owner: str, name: str, kind: PropertyKind, value: Any) -> PropertyValue:
    where = f"{owner}: property {name!r}"
    wrong = InputError(f"{where} is {kind}, not {type(value).__name__} ({str(value)[:40]!r})", hint=_HINTS[kind])
    if kind is PropertyKind.string:
        if not isinstance(value, str):
            raise wrong
        return _bounded(where, value, MAX_STRING_CHARS)
    if kind is PropertyKind.integer:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong
        if not -(2**63) <= value < 2**63:
            raise InputError(f"{where} is out of the 64-bit integer range", hint="store it as a string property")
        return value
    if kind is PropertyKind.number:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong
        try:  # an int past a double's range (10**400) raises here, not in math.isfinite's caller
            number = float(value)
        except OverflowError:
            raise InputError(f"{where} is out of a number's range", hint=_HINTS[kind]) from None
        if not math.isfinite(number):
            raise wrong
        return number
    if kind is PropertyKind.boolean:
        if not isinstance(value, bool):
            raise wrong
        return value
    if kind is PropertyKind.date:
        if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise wrong
        try:
            date.fromisoformat(value)
        except ValueError:
            raise wrong from None
        return value
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise wrong
    if len(value) > MAX_LIST_ITEMS:
        raise InputError(f"{where} has {len(value)} items; at most {MAX_LIST_ITEMS}", hint="keep the main ones")
    return [_bounded(where, v, MAX_LIST_ITEM_CHARS) for v in value]


def _bounded(where: str, value: str, limit: int) -> str:
    if len(value) > limit:
        raise InputError(
            f"{where} is {len(value)} characters; at most {limit}",
            hint="shorten it; a long text belongs in a document (ingest) or the description",
        )
    return value


_HINTS = {
    PropertyKind.string: "pass a string",
    PropertyKind.integer: "pass a whole number, e.g. 1998 (not '1998')",
    PropertyKind.number: "pass a number, e.g. 4.5",
    PropertyKind.boolean: "pass true or false",
    PropertyKind.date: "pass an ISO date 'YYYY-MM-DD', e.g. '1998-09-04'",
    PropertyKind.string_list: "pass a list of strings, e.g. ['a', 'b']",
}


class PropertyOwner(BaseModel):
    """An entity (by id) or a relation (by id, with its ends, which find it quickly on both stores)."""

    model_config = ConfigDict(frozen=True)

    owner: Owner
    id: str
    source: str | None = Field(None, description="a relation's source entity id")
    target: str | None = Field(None, description="a relation's target entity id")


def grouped(items: Sequence[tuple[PropertyOwner, T]]) -> list[tuple[Owner, list[tuple[PropertyOwner, T]]]]:
    """`items` split by owner kind (entities first), as each kind lives in its own table."""
    out: list[tuple[Owner, list[tuple[PropertyOwner, T]]]] = []
    for kind in OWNERS:
        mine = [item for item in items if item[0].owner == kind]
        if mine:
            out.append((kind, mine))
    return out


def with_sources(
    writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], found: dict[str, str | None], source: str
) -> list[tuple[PropertyOwner, Mapping[str, Any], str]]:
    """Each write to an owner that exists (`found`: id -> its `_property_sources` JSON), with that
    JSON after it: `source` for each value set, nothing for one removed. `found` is updated, so a
    second write to one owner builds on the first."""
    out = []
    for o, values in writes:
        if o.id not in found:
            continue
        held = json.loads(found[o.id] or "{}")
        for name, value in values.items():
            if value is None:
                held.pop(name, None)
            else:
                held[name] = source
        found[o.id] = json.dumps(held, sort_keys=True)
        out.append((o, values, found[o.id] or "{}"))
    return out


class StoredProperties(BaseModel):
    """The declared properties one entity or relation holds, and who set each."""

    values: dict[str, PropertyValue] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict, description="property -> who set it (e.g. 'agent')")
