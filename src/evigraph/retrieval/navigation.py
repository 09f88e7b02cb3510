"""Walking a document's structure from one passage: its section, its neighbours, its tables.

Agents often find one good passage and need the text around it (the rest of a section, the
table a sentence refers to); these walks answer that from the stored breadcrumbs and reading
order, without a new search.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from evigraph.errors import NotFoundError
from evigraph.evidence.ids import EvidenceId
from evigraph.evidence.items import PassageText
from evigraph.models import PassageHit
from evigraph.retrieval.passages import passage_text
from evigraph.store.base import GraphStore

Relation = Literal["parent", "children", "siblings", "previous", "next", "table_context"]


class Navigation(BaseModel):
    anchor: str = Field(description="id of the passage navigated from")
    relation: Relation
    items: list[PassageText] = Field(default_factory=list)
    found: int = Field(0, description="passages standing in the relation, before the bounds")
    truncated: bool = False
    truncation_reason: str | None = None


def neighbourhood(anchor: PassageHit, chunks: list[PassageHit], relation: Relation) -> list[PassageHit]:
    """The passages of `chunks` (one document, reading order) standing in `relation` to `anchor`."""
    crumbs = anchor.breadcrumbs
    before = [c for c in chunks if c.index < anchor.index]
    after = [c for c in chunks if c.index > anchor.index]
    if relation == "previous":
        return before[::-1]
    if relation == "next":
        return after
    if relation == "siblings":
        return [c for c in chunks if c.breadcrumbs == crumbs and c.id != anchor.id]
    if relation == "children":
        return [c for c in after if len(c.breadcrumbs) > len(crumbs) and c.breadcrumbs[: len(crumbs)] == crumbs]
    if relation == "parent":
        if not crumbs:
            return []
        up = crumbs[:-1]
        exact = [c for c in chunks if c.breadcrumbs == up]
        return exact[:1] or [c for c in chunks if c.breadcrumbs[: len(up)] == up and c.id != anchor.id][:1]
    # table_context: around a table, its neighbours in the section; elsewhere, the section's tables
    from evigraph.ingest.loaders.markdown import holds_table_rows  # the Markdown reader, for this relation only

    section = [c for c in chunks if c.breadcrumbs == crumbs and c.id != anchor.id]
    if holds_table_rows(anchor.text):
        near = sorted(section, key=lambda c: abs(c.index - anchor.index))
        return sorted(near[:2], key=lambda c: c.index)
    return [c for c in section if holds_table_rows(c.text)]


async def navigate(store: GraphStore, passage: str, relation: Relation, limit: int, max_chars: int) -> Navigation:
    """Up to `limit` passages in `relation` to `passage`, sharing `max_chars` of text."""
    anchors = await store.passages_by_ids([passage])
    if not anchors:
        raise NotFoundError(
            f"{EvidenceId('passage', passage)} is not a current passage",
            hint="its document was replaced or deleted; search again",
        )
    anchor = anchors[0]
    picked = neighbourhood(anchor, await store.document_passages(anchor.document), relation)
    document = (await store.get_documents([anchor.document])).get(anchor.document)
    result = Navigation(anchor=passage, relation=relation, found=len(picked))
    budget = max_chars
    for hit in picked:
        if len(result.items) >= limit:
            result.truncated, result.truncation_reason = True, "limit"
            break
        if budget <= 0:
            result.truncated, result.truncation_reason = True, "max_chars"
            break
        item = passage_text(hit, budget, document)
        budget -= len(item.text)
        result.items.append(item)
    return result
