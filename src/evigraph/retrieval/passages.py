"""Passage reads: plain search (lexical, semantic or both), exact reads by id, and snippets.

`retrieve` is the multi-path search for questions; these are the direct reads an agent uses
once it knows what it wants: words to look up, or passages to quote in full.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError
from evigraph.evidence.items import PassageItem, PassageText
from evigraph.evidence.render import citation_line
from evigraph.limits import DEFAULT_LIMITS
from evigraph.models import PassageHit, StoredDocument
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.fusion import rrf
from evigraph.retrieval.hits import passage_item, source_of
from evigraph.retrieval.match import MatchQuality, assess, question_terms
from evigraph.retrieval.vectors import question_vector
from evigraph.store.base import GraphStore, VectorSearch
from evigraph.store.terms import searchable_text

SearchMode = Literal["lexical", "semantic", "hybrid"]
SNIPPET_CHARS = DEFAULT_LIMITS.max_snippet_chars
_WORD = re.compile(r"\w+", re.UNICODE)


class PassageSearch(BaseModel):
    query: str
    mode: SearchMode
    hits: list[PassageItem] = Field(default_factory=list)
    semantic_skipped: bool = Field(False, description="hybrid ran lexical only: no embedder or no vectors")
    pending_embeddings: int | None = Field(None, description="passages without a vector, when vectors were used")
    match: MatchQuality | None = Field(
        None, description="how closely the best passages match the query; weak_match says it may not be covered"
    )


def snippet(text: str, query: str, size: int = SNIPPET_CHARS) -> str:
    """About `size` characters of `text` around its first word from `query`, cut at word boundaries."""
    if len(text) <= size:
        return text
    terms = {t.casefold() for t in _WORD.findall(query) if len(t) > 2}
    start = 0
    for m in _WORD.finditer(text):
        if m.group().casefold() in terms:
            start = max(0, m.start() - size // 4)
            break
    piece = text[start : start + size]
    if start > 0:
        piece = "…" + piece.split(" ", 1)[-1]
    if start + size < len(text):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return piece


async def search_passages(
    store: GraphStore,
    embedder: Embedder | None,
    query: str,
    mode: SearchMode,
    limit: int,
    snippet_chars: int = SNIPPET_CHARS,
) -> PassageSearch:
    """Ranked passage snippets for plain words; semantic alone without vectors is an error."""
    result = PassageSearch(query=query, mode=mode)
    lists: dict[str, list[str]] = {}
    hits: dict[str, PassageHit] = {}
    vectors: VectorSearch | None = None
    if mode in ("lexical", "hybrid"):
        lexical = await store.search_passages(query, limit * 2)
        hits.update({h.id: h for h in lexical})
        lists["lexical"] = [h.id for h in lexical]
    if mode in ("semantic", "hybrid"):
        vector = await question_vector(store, embedder, query) if embedder is not None else None
        if vector is None:
            if mode == "semantic":
                raise ConfigurationError(
                    "semantic search needs passage vectors, and this knowledge base has none for this embedder",
                    hint="use mode='lexical', or serve the knowledge base with the embedder it was built with "
                    "and run finalize",
                )
            result.semantic_skipped = True
        else:
            vectors = await store.vector_search_stats(vector, limit * 2)
            lists["semantic"] = [cid for cid, _ in vectors.hits]
            result.pending_embeddings = await store.count_pending_embeddings()
    fused = rrf({k: v for k, v in lists.items() if v})[:limit]
    missing = [f.key for f in fused if f.key not in hits]
    fetched, counts = await asyncio.gather(store.passages_by_ids(missing), store.term_counts(question_terms(query)))
    hits.update({h.id: h for h in fetched})
    first = (hits[f.key] for f in fused if f.key in hits)
    result.match = assess(
        query, counts, (searchable_text(h.title, h.breadcrumbs, h.text, h.context) for h in first), vectors
    )
    for f in fused:
        hit = hits.get(f.key)
        if hit is None:
            continue
        item = passage_item(hit, snippet(hit.text, query, snippet_chars))
        item.score, item.scores, item.paths = f.score, f.scores, sorted(f.scores)
        result.hits.append(item)
    return result


class PassageRead(BaseModel):
    passages: list[PassageText] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="ids that name no current passage")


def passage_text(hit: PassageHit, max_chars: int, document: StoredDocument | None) -> PassageText:
    """The passage as read, with the document version it belongs to: a citation names the version,
    so a reader can tell whether the text it quotes is still what the document says. `document`
    is the document's current version (None: the document is gone)."""
    text = hit.text[:max_chars]
    source = source_of(hit)
    current = document is not None and document.version == hit.version
    return PassageText(
        id=hit.id,
        text=text,
        partial=len(text) < len(hit.text),
        source=source,
        citation=citation_line(source),
        version=hit.version,
        content_hash=document.content_hash if current and document is not None else None,
        current=current,
    )


async def read_passages(store: GraphStore, ids: Sequence[str], max_chars: int) -> PassageRead:
    """The stored text of each passage (up to `max_chars`), in the order asked, and the ids not found."""
    wanted = list(dict.fromkeys(ids))
    found = {h.id: h for h in await store.passages_by_ids(wanted)}
    documents = await store.get_documents(list(dict.fromkeys(h.document for h in found.values())))
    result = PassageRead()
    for cid in wanted:
        hit = found.get(cid)
        if hit is None:
            result.missing.append(cid)
        else:
            result.passages.append(passage_text(hit, max_chars, documents.get(hit.document)))
    return result


async def missing_passages(store: GraphStore, ids: Sequence[str]) -> list[str]:
    """The ids among `ids` that name no current passage."""
    wanted = list(dict.fromkeys(ids))
    found = {h.id for h in await store.passages_by_ids(wanted)}
    return [cid for cid in wanted if cid not in found]
