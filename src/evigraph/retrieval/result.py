"""The typed result of `retrieve`: entities, relations, facts and passages, each citable by `n`.

One shape whatever paths ran, so callers never branch on arguments. Every item carries its
scores (per path and fused), where it came from, and `n`, the number an answer cites as `[n]`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Source(BaseModel):
    """Where a passage lives: enough for a human to open it."""

    document: str = Field(description="document key")
    title: str
    path: str | None = None
    page: int | None = None
    start: int = Field(0, description="character offset of the passage in its document")
    end: int = 0
    breadcrumbs: list[str] = Field(default_factory=list)


class Item(BaseModel):
    n: int = Field(0, description="evidence number to cite as [n]")
    evidence_id: str = Field("", description="stable id of this evidence across sessions")
    score: float = Field(0.0, description="fused score; higher is better")
    scores: dict[str, float] = Field(default_factory=dict, description="rank score per search path")
    paths: list[str] = Field(default_factory=list, description="search paths that found this item")


class PassageItem(Item):
    id: str = Field(description="chunk id")
    text: str
    source: Source

    @property
    def document(self) -> str:
        return self.source.document


class EntityItem(Item):
    id: str
    name: str
    label: str
    description: str = ""
    location: Source | None = Field(None, description="where a passage that mentions it lives")


class RelationItem(Item):
    id: str
    source: str = Field(description="source entity name")
    type: str
    target: str = Field(description="target entity name")
    fact: str
    confidence: float
    hop: int = Field(1, description="hops from the entities the question names")
    passages: list[str] = Field(default_factory=list, description="chunk ids that state it")
    location: Source | None = Field(None, description="where the first passage that states it lives")


class RetrievalResult(BaseModel):
    question: str
    entities: list[EntityItem] = Field(default_factory=list)
    relations: list[RelationItem] = Field(default_factory=list)
    facts: list[RelationItem] = Field(default_factory=list)
    passages: list[PassageItem] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list, description="search paths that ran")

    def to_context(self, max_tokens: int = 2000) -> str:
        """Pack the result into text an LLM can read, every item prefixed `[n]`, within `max_tokens`."""
        from evigraph.retrieval.context import pack_context

        return pack_context(self, max_tokens)
