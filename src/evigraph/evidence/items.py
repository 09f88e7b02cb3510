"""The evidence items every read returns: passages, entities, relations, each citable.

One shape whatever produced them (retrieve, a passage search, an entity card, a walk), so the
ledger numbers them, the renderers write them and an agent cites them the same way everywhere.
`n` is the session's number for the item (0 until a ledger numbers it); `evidence_id` is derived
from the item's kind and id, so it can never disagree with what the item is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field, PrivateAttr, computed_field

from evigraph.evidence.ids import EvidenceId, EvidenceKind
from evigraph.property_types import PropertyValue

T = TypeVar("T")


class Source(BaseModel):
    """Where a passage lives: enough for a human to open it."""

    document_key: str = Field(description="key of the document the passage belongs to")
    title: str
    path: str | None = None
    page: int | None = None
    start: int = Field(0, description="character offset of the passage in its document")
    end: int = 0
    breadcrumbs: list[str] = Field(default_factory=list)


def property_text(properties: Mapping[str, object]) -> str:
    """Declared properties as one bracketed run, ' [born: 1815-12-10; fields: a, b]', or ''."""
    if not properties:
        return ""
    shown = (f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in properties.items())
    return f" [{'; '.join(shown)}]"


class Item(BaseModel):
    KIND: ClassVar[EvidenceKind]

    id: str
    n: int = Field(0, description="evidence number to cite as [n]")
    score: float = Field(0.0, description="fused score; higher is better")
    scores: dict[str, float] = Field(default_factory=dict, description="rank score per ranked list")
    paths: list[str] = Field(default_factory=list, description="search paths that found this item")

    @computed_field(description="stable id of this evidence across sessions")  # type: ignore[prop-decorator]
    @property
    def evidence_id(self) -> str:
        return str(self.ref)

    @property
    def ref(self) -> EvidenceId:
        return EvidenceId.of(self.KIND, self.id)


class PassageItem(Item):
    KIND: ClassVar[EvidenceKind] = "passage"

    id: str = Field(description="passage id")
    text: str
    source: Source
    partial: bool = Field(False, description="text is cut; read_passages gives the whole passage")

    @property
    def document_key(self) -> str:
        return self.source.document_key


class PassageText(PassageItem):
    """A passage read in full (or up to a bound), with the line a human cites it by."""

    citation: str = Field("", description="title, path and location, ready to cite")
    version: int = Field(0, description="the version of its document the text was read from")
    content_hash: str | None = Field(None, description="content hash of that document version (as source_status)")
    current: bool = Field(True, description="whether that version was the document's current one when read")


class EntityItem(Item):
    KIND: ClassVar[EvidenceKind] = "entity"

    name: str
    label: str
    description: str = ""
    location: Source | None = Field(None, description="where a passage that mentions it lives")
    properties: dict[str, PropertyValue] = Field(default_factory=dict, description="declared properties it holds")
    property_sources: dict[str, str] = Field(default_factory=dict, description="property -> who set it")


class EntityCard(EntityItem):
    """An entity with passages that mention it, as an entity search returns it."""

    support: list[PassageItem] = Field(default_factory=list, description="passages that mention it")


class RelationItem(Item):
    KIND: ClassVar[EvidenceKind] = "relation"

    source: str = Field(description="source entity name")
    type: str
    target: str = Field(description="target entity name")
    fact: str
    confidence: float
    hop: int = Field(1, description="hops from the entities the question names")
    passages: list[str] = Field(default_factory=list, description="ids of the passages that state it")
    location: Source | None = Field(None, description="where the first passage that states it lives")
    properties: dict[str, PropertyValue] = Field(default_factory=dict, description="declared properties it holds")
    property_sources: dict[str, str] = Field(default_factory=dict, description="property -> who set it")
    _ends: tuple[str, str] | None = PrivateAttr(None)

    @property
    def ends(self) -> tuple[str, str] | None:
        """Its source and target entity ids, when the read that made it knew them (they find its properties)."""
        return self._ends


class ThemeItem(Item):
    """A cluster of related entities found at finalize, with passages that mention its members."""

    KIND: ClassVar[EvidenceKind] = "theme"

    size: int
    entities: list[str] = Field(description="member names, most connected first")
    members: str = Field("", description="every member as 'name (label)', what a citation is checked against")
    passages: list[PassageItem] = Field(default_factory=list)


@dataclass(frozen=True)
class PerKind(Generic[T]):
    """What a reader makes of each kind of item (its line, its citable text), called on any item.

    Every reader names a function for every kind, so a new kind cannot be left out of one of
    them unnoticed; a subclass (`PassageText`, `EntityCard`) counts as its kind."""

    what: str
    passage: Callable[[PassageItem], T]
    entity: Callable[[EntityItem], T]
    relation: Callable[[RelationItem], T]
    theme: Callable[[ThemeItem], T]

    def __call__(self, item: Item) -> T:
        if isinstance(item, PassageItem):
            return self.passage(item)
        if isinstance(item, EntityItem):
            return self.entity(item)
        if isinstance(item, RelationItem):
            return self.relation(item)
        if isinstance(item, ThemeItem):
            return self.theme(item)
        raise TypeError(f"no {self.what} for {type(item).__name__}")
