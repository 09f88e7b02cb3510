"""What resolution at finalize reads from a store and asks it to do: entities, merges, redirects.

Resolution decides which entities are one (`ingest/graph_resolution.py`); a store carries a
merge out in one transaction and remembers it: every later write re-points the merged-away id at
the survivor, so a document naming the old spelling again attaches to the survivor instead of
bringing the duplicate back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EntityRecord:
    """An entity with what blocking, judging and choosing a survivor read."""

    id: str
    name: str
    label: str
    aliases: tuple[str, ...] = ()
    descriptions: tuple[str, ...] = ()
    mentions: int = 0
    """Passages that mention it: the better-attested entity survives a merge."""


@dataclass(frozen=True)
class EntityMerge:
    """Fold the entities `merged` into `survivor`."""

    survivor: str
    merged: tuple[str, ...]


@dataclass(frozen=True)
class MergeOutcome:
    """What a batch of merges changed."""

    merged: int = 0
    """Entities folded away."""
    mentions_moved: int = 0
    """Mentions re-pointed at a survivor that had none in that passage."""
    mentions_folded: int = 0
    """Mentions joined with the survivor's own in the same passage (spans united)."""
    relations_moved: int = 0
    """Relations re-pointed at a survivor."""
    relations_folded: int = 0
    """Relations that became one already there (passages united) or a relation of an entity to
    itself (dropped)."""
    skipped: tuple[str, ...] = ()
    """Survivors of merges not made because an entity named was gone."""
