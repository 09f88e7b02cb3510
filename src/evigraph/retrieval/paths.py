"""The search paths as a table: each public path names the legs it needs, each leg is one coroutine.

A leg is one or two store calls that fill its part of `Found`. Legs of the first stage read only
the question; those of the second read what the first found (the entities named become seeds for
links and mentions, the best passages carry the candidate facts). Several paths share a leg (the
passage searches serve both `passages` and `facts`), so a leg runs once however many paths want it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from evigraph.models import EntityHit, Neighbour, PassageHit
from evigraph.retrieval import code_symbols
from evigraph.retrieval.analysis import name_terms, question_phrases
from evigraph.retrieval.query import SearchPath
from evigraph.store.base import GraphStore, VectorSearch


@dataclass
class Found:
    """What the legs found for one question, each leg writing its own fields."""

    bm25: list[PassageHit] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    exact: list[str] = field(default_factory=list)
    fuzzy: list[EntityHit] = field(default_factory=list)
    links: list[Neighbour] = field(default_factory=list)
    facts: list[Neighbour] = field(default_factory=list)
    near_facts: list[Neighbour] = field(default_factory=list)  # nearest the question by fact vector, best first
    mentions: list[tuple[str, str]] = field(default_factory=list)
    graph: dict[str, float] | None = None  # chunk id -> graph ranking score, best first
    vector_stats: VectorSearch | None = None  # the question's cosines to every passage, for match quality

    def seeds(self) -> list[str]:
        """Where links start: the entities named exactly, then the best five by fuzzy name."""
        return list(dict.fromkeys([*self.exact, *(e.id for e in self.fuzzy[:5])]))

    def entity_ids(self, paths: Sequence[str]) -> list[str]:
        """The entities the name paths that ran found, exact first: the ones whose mentions count."""
        exact = self.exact if "exact_names" in paths else []
        fuzzy = [e.id for e in self.fuzzy] if "fuzzy_names" in paths else []
        return list(dict.fromkeys([*exact, *fuzzy]))


@dataclass(frozen=True)
class Asked:
    """One question as the legs see it."""

    store: GraphStore
    question: str
    paths: tuple[SearchPath, ...]
    top_k: int
    hops: int
    pool: int
    """Candidates full-text search fetches."""
    vector: list[float] | None
    vector_pool: int
    """Candidates vector search fetches: graph ranking scales cosines over more than `pool`."""
    fact_pool: int = 0
    """Relations the fact-vector leg fetches with the `facts` path (0: the leg is off)."""


@dataclass(frozen=True)
class Leg:
    stage: int
    run: Callable[[Asked, Found], Awaitable[None]]


async def _passages(a: Asked, found: Found) -> None:
    found.bm25 = await a.store.search_passages(a.question, a.pool)
    if a.vector is not None:
        found.vector_stats = await a.store.vector_search_stats(a.vector, max(a.pool, a.vector_pool))
        found.vector = found.vector_stats.hits


async def _exact(a: Asked, found: Found) -> None:
    named = await a.store.entities_named(question_phrases(a.question))
    found.exact = list(dict.fromkeys(eid for ids in named.values() for eid in ids))


async def _fuzzy(a: Asked, found: Found) -> None:
    terms = name_terms(a.question)
    found.fuzzy = await code_symbols.search_with_code(a.store, terms, a.top_k * 2) if terms else []


async def _links(a: Asked, found: Found) -> None:
    seeds = found.seeds()
    if seeds:
        found.links = await a.store.neighbours(seeds, hops=a.hops, limit=min(4 * a.top_k, 40))


async def _facts(a: Asked, found: Found) -> None:
    top_chunks = [h.id for h in found.bm25[:10]] + [cid for cid, _ in found.vector[:10]]
    candidates = await a.store.relations_for_passages(list(dict.fromkeys(top_chunks)), limit=400)
    found.facts = rank_facts(a.question, candidates)[: a.top_k]


async def _near_facts(a: Asked, found: Found) -> None:
    if a.vector is not None and a.fact_pool > 0:
        found.near_facts = [rel for rel, _ in await a.store.search_facts(a.vector, a.fact_pool)]


async def _mentions(a: Asked, found: Found) -> None:
    ids = found.entity_ids(a.paths)
    if ids:
        found.mentions = await code_symbols.mentions(a.store, ids[: a.top_k], per_entity=3)


LEGS = MappingProxyType(
    {
        "passages": Leg(0, _passages),
        "exact": Leg(0, _exact),
        "fuzzy": Leg(0, _fuzzy),
        "links": Leg(1, _links),
        "facts": Leg(1, _facts),
        "near_facts": Leg(0, _near_facts),
        "mentions": Leg(1, _mentions),
    }
)
PATH_LEGS: MappingProxyType[SearchPath, tuple[str, ...]] = MappingProxyType(
    {
        "passages": ("passages",),
        "exact_names": ("exact", "mentions"),
        "fuzzy_names": ("fuzzy", "mentions"),
        "links": ("exact", "links"),
        "facts": ("passages", "facts", "near_facts"),
    }
)
"""Public path -> the legs it needs (`near_facts` searches fact vectors only for a recipe that
gives it a pool, `RetrievalRecipe.fact_vectors`). `links` walks from the entities the question names exactly,
and from the best five by fuzzy name when fuzzy names are asked for or exact ones are not
(`legs_for`): a recipe of exact names and links (`local`) stays with the names the question holds."""


def legs_for(paths: Sequence[SearchPath]) -> set[str]:
    """The legs `paths` need."""
    wanted = {leg for path in paths for leg in PATH_LEGS[path]}
    if "links" in paths and "exact_names" not in paths:
        wanted.add("fuzzy")
    return wanted


async def run_legs(asked: Asked) -> Found:
    """Every leg the asked paths need, each once, a stage's legs concurrently."""
    wanted = legs_for(asked.paths)
    found = Found()
    for stage in sorted({leg.stage for leg in LEGS.values()}):
        await asyncio.gather(
            *(leg.run(asked, found) for name, leg in LEGS.items() if leg.stage == stage and name in wanted)
        )
    return found


_TERM = re.compile(r"\w+", re.UNICODE)
_FACT_STOP = frozenset("a an the of in on at to for from by with and or is are was were who what which".split())  # noqa: SIM905


def rank_facts(question: str, candidates: Sequence[Neighbour]) -> list[Neighbour]:
    """Facts sharing the most question terms first; ties by confidence."""
    terms = {t for t in _TERM.findall(question.casefold()) if t not in _FACT_STOP}
    scored = []
    for rel in {r.id: r for r in candidates}.values():
        overlap = len(terms & _fact_terms(rel.fact))
        if overlap:
            scored.append((overlap, rel.confidence, rel))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2].id))
    seen: set[str] = set()
    out = []
    for _, _, rel in scored:  # one fact per sentence: several relations often share it
        sentence = " ".join(rel.fact.split()).casefold()
        if sentence not in seen:
            seen.add(sentence)
            out.append(rel)
    return out


@lru_cache(maxsize=65_536)
def _fact_terms(fact: str) -> frozenset[str]:
    """A fact sentence's words, kept across questions: the same few hundred candidate facts come
    back for every question about a topic, and splitting them anew was half of ranking them."""
    return frozenset(_TERM.findall(fact.casefold()))
