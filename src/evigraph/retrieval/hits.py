"""Evidence items built from what the store returns, the one place store rows become items."""

from __future__ import annotations

from evigraph.evidence.items import EntityItem, PassageItem, RelationItem, Source
from evigraph.models import EntityHit, Neighbour, PassageHit


def source_of(hit: PassageHit) -> Source:
    return Source(
        document_key=hit.document,
        title=hit.title,
        path=hit.path,
        page=hit.page,
        start=hit.start,
        end=hit.end,
        breadcrumbs=hit.breadcrumbs,
    )


def passage_item(hit: PassageHit, text: str | None = None) -> PassageItem:
    """The passage of `hit`; `text` when only part of it is shown (then marked partial)."""
    shown = hit.text if text is None else text
    return PassageItem(id=hit.id, text=shown, partial=len(shown) < len(hit.text), source=source_of(hit))


def entity_item(hit: EntityHit) -> EntityItem:
    return EntityItem(id=hit.id, name=hit.name, label=hit.label, description=hit.description)


def relation_item(r: Neighbour) -> RelationItem:
    item = RelationItem(
        id=r.id,
        source=r.source_name,
        type=r.type,
        target=r.target_name,
        fact=r.fact,
        confidence=r.confidence,
        hop=r.hop,
        score=r.confidence,
        passages=r.source_passages,
    )
    item._ends = (r.source, r.target)
    return item
