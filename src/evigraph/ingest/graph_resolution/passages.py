"""Passages naming the entities a judge weighs, read from the store only when a judge asks.

The LLM shows a snippet of one passage per entity; the fuzzy judge looks for an acronym spelt
out beside its expansion. Reading passages costs store look-ups per entity, so a judge asks for
the entities it needs and nothing is read for the others.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from evigraph.ingest.graph_resolution.base import PassageSource
from evigraph.store.base import GraphStore
from evigraph.store.merging import EntityRecord

SNIPPET_CHARS = 160
"""A snippet of a passage naming an entity: enough to tell two Paris apart, cheap per LLM call."""


class StorePassages(PassageSource):
    """Passages from the store, through the contract's passage reads."""

    def __init__(self, store: GraphStore, entities: Mapping[str, EntityRecord]) -> None:
        self.store = store
        self.entities = entities

    async def texts(self, ids: Collection[str], per_entity: int = 1) -> dict[str, list[str]]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        chunks: dict[str, list[str]] = {}
        for eid, cid in await self.store.passages_for_entities(wanted, per_entity=per_entity):
            chunks.setdefault(eid, []).append(cid)
        every = sorted({c for cs in chunks.values() for c in cs})
        text = {c.id: c.text for c in await self.store.passages_by_ids(every)}
        return {eid: [text[c] for c in cs if c in text] for eid, cs in chunks.items()}

    async def snippets(self, ids: Collection[str]) -> dict[str, str]:
        found = await self.texts(ids)
        out = {}
        for eid, texts in found.items():
            if texts:
                entity = self.entities[eid]
                out[eid] = cut_around(texts[0], (entity.name, *entity.aliases))
        return out


class NoPassages(PassageSource):
    """For judging names apart from any store: no passage names anything."""

    async def texts(self, ids: Collection[str], per_entity: int = 1) -> dict[str, list[str]]:
        return {}

    async def snippets(self, ids: Collection[str]) -> dict[str, str]:
        return {}


def cut_around(text: str, names: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `text` around the first of `names` found in it (its start when none is)."""
    flat = " ".join(text.split())
    folded = flat.casefold()
    found = [i for i in (folded.find(n.casefold()) for n in names if n) if i >= 0]
    at = min(found) if found else 0
    start = max(0, min(at - width // 3, len(flat) - width))
    piece = flat[start : start + width]
    if start > 0:
        piece = "…" + re.sub(r"^\S*\s", "", piece, count=1)
    if start + width < len(flat):
        piece = re.sub(r"\s\S*$", "", piece) + "…"
    return piece
