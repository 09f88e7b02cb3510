"""Ranking themes (communities found at finalize) for a query, with passages that show them.

A theme scores by the passages that match the query and mention its members (each passage
counting by its rank, as in reciprocal-rank fusion), plus a little for each member named in the
query: broad questions ("what are the main topics") land on the clusters the documents talk
about, not on the biggest cluster.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pydantic import BaseModel, Field

from evigraph.evidence.items import ThemeItem
from evigraph.models import ThemeRecord
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.analysis import question_phrases
from evigraph.retrieval.fusion import rrf
from evigraph.retrieval.hits import passage_item
from evigraph.retrieval.passages import SNIPPET_CHARS, snippet
from evigraph.retrieval.vectors import nearest_passages
from evigraph.store.base import GraphStore

THEME_NAMES_SHOWN = 5
RANKED_PASSAGES = 30
MEMBERS_FOR_SUPPORT = 20


class ThemeSearch(BaseModel):
    query: str
    themes: list[ThemeItem] = Field(default_factory=list)
    index_state: str = Field("ready", description="ready, or missing when finalize has not found themes")


@dataclass
class _ThemeIndex:
    themes: list[ThemeRecord]
    by_member: dict[str, list[int]]
    by_name: dict[str, list[int]]


_theme_index_cache: list[_ThemeIndex] = []


def _theme_index(themes: list[ThemeRecord]) -> _ThemeIndex:
    """Member and name look-ups over the themes, built once per themes list the store hands out.

    The store returns the same list object until a write, so identity is the cache key.
    """
    if _theme_index_cache and _theme_index_cache[0].themes is themes:
        return _theme_index_cache[0]
    by_member: dict[str, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i, t in enumerate(themes):
        for m in t.members:
            by_member.setdefault(m, []).append(i)
        for name in t.names:
            by_name.setdefault(name.casefold(), []).append(i)
    index = _ThemeIndex(themes, by_member, by_name)
    _theme_index_cache[:] = [index]
    return index


async def search_themes(
    store: GraphStore,
    embedder: Embedder | None,
    query: str,
    limit: int,
    support_limit: int,
    snippet_chars: int = SNIPPET_CHARS,
) -> ThemeSearch:
    result = ThemeSearch(query=query)
    themes = await store.themes()
    if not themes:
        result.index_state = "missing"
        return result
    chunks = [h.id for h in await store.search_passages(query, RANKED_PASSAGES)]
    semantic = await nearest_passages(store, embedder, query, RANKED_PASSAGES)
    ranked = [f.key for f in rrf({"lexical": chunks, "semantic": semantic or []})]
    weight: dict[str, float] = {}
    rank = {cid: i for i, cid in enumerate(ranked)}
    for cid, eid in await store.entities_for_passages(ranked):
        weight[eid] = weight.get(eid, 0.0) + 1.0 / (60 + rank[cid])
    terms = {t.casefold() for t in question_phrases(query)} | set(query.casefold().split())
    index = _theme_index(themes)
    scores: dict[int, float] = {}
    for eid, w in weight.items():
        for i in index.by_member.get(eid, ()):
            scores[i] = scores.get(i, 0.0) + w
    for term in terms:
        for i in index.by_name.get(term, ()):
            scores[i] = scores.get(i, 0.0) + 1.0 / 60
    top = sorted(scores.items(), key=lambda kv: (-kv[1], themes[kv[0]].id))[:limit]
    chosen = [(score, themes[i]) for i, score in top]
    # Supporting passages for every chosen theme in two store calls: the passages that mention most members.
    members = [m for _, t in chosen for m in t.members[:MEMBERS_FOR_SUPPORT]]
    mentions = await store.passages_for_entities(members, per_entity=3)
    member_of = {m: t.id for _, t in chosen for m in t.members[:MEMBERS_FOR_SUPPORT]}
    per_theme: dict[str, Counter[str]] = {}
    for eid, cid in mentions:
        per_theme.setdefault(member_of[eid], Counter())[cid] += 1
    support = {t.id: [cid for cid, _ in per_theme.get(t.id, Counter()).most_common(support_limit)] for _, t in chosen}
    wanted = list(dict.fromkeys(c for ids in support.values() for c in ids))
    texts = {h.id: h for h in await store.passages_by_ids(wanted)}
    for score, t in chosen:
        names = " ".join(t.names[:THEME_NAMES_SHOWN])
        result.themes.append(
            ThemeItem(
                id=t.id,
                score=score,
                size=t.size,
                entities=t.names[:THEME_NAMES_SHOWN],
                members=", ".join(f"{n} ({lb})" for n, lb in zip(t.names, t.labels, strict=True)),
                passages=[
                    passage_item(texts[c], snippet(texts[c].text, names, snippet_chars))
                    for c in support[t.id]
                    if c in texts
                ],
            )
        )
    return result
