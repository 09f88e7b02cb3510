"""The store's part of declared properties: columns for them, writing, reading and counting values.

Kept apart from `GraphStore`'s other duties (and mixed into it) since it is one concern every
store implements in its own dialect: the embedded engine has a fixed schema, so a declared
property becomes a real column (`ALTER TABLE ... ADD`) a Cypher query names like any other;
FalkorDB has no schema, so the same names are plain properties there. Values arrive checked
against the ontology (`evigraph.property_types.check_values`); a store only keeps them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.property_types import Owner, PropertyKind, PropertyOwner, StoredProperties


class PropertyStore(ABC):
    @abstractmethod
    async def add_property_columns(self, owner: Owner, columns: Mapping[str, PropertyKind]) -> None:
        """Make each declared property of entities (or relations) storable and queryable; idempotent.

        A column that exists with another type raises `StoreError` naming it: its values would not fit.
        """

    @abstractmethod
    async def write_properties(
        self, writes: Sequence[tuple[PropertyOwner, Mapping[str, Any]]], source: str
    ) -> list[str]:
        """Set each owner's given properties (None removes one), recording `source` as who set each;
        properties not named are kept. Returns the ids of owners that do not exist (nothing is set on them)."""

    @abstractmethod
    async def read_properties(
        self, owners: Sequence[PropertyOwner], names: Sequence[str]
    ) -> dict[str, StoredProperties]:
        """The properties among `names` each owner holds, by owner id (owners holding none are left out)."""

    @abstractmethod
    async def count_property_values(
        self, owner: Owner, names: Sequence[str], types: Sequence[str] | None = None
    ) -> dict[str, int]:
        """How many entities (or relations) hold a value of each property, so a declaration that
        would drop one can say what it holds; with `types`, only those of these entity labels (or
        relation types), as one type may drop a name another keeps."""
