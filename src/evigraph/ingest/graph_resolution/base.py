"""The finalize resolver contract: judge candidate pairs, then cluster and choose survivors.

Blocking (`ingest/candidates.py`) says which pairs of entities are worth a look; a resolver says
which of them are one thing. Clustering and the choice of survivor are shared, so resolvers
differ only in their judgement: by names offline (`fuzzy`), by an LLM (`llm`), or not at all
(`exact`, which leaves the exact id match ingest already made).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from evigraph.ingest.candidates import CandidatePair
from evigraph.models import UNKNOWN_LABEL, LLMSpend
from evigraph.store.merging import EntityMerge, EntityRecord

LABEL_FAMILIES: Mapping[str, str] = {
    **dict.fromkeys(("person", "people", "human", "individual", "character"), "person"),
    **dict.fromkeys(("organization", "organisation", "company", "institution", "agency", "group", "team"), "org"),
    **dict.fromkeys(("location", "place", "country", "city", "region", "facility", "building", "landmark"), "place"),
    **dict.fromkeys(("product", "technology", "method", "dataset", "device", "work", "software", "tool"), "work"),
    **dict.fromkeys(("date", "time", "period"), "time"),
    **dict.fromkeys(("law", "regulation", "legislation", "policy", "standard", "treaty"), "law"),
}
"""Labels that can name one thing under two types, as extractors disagree: spaCy tags a product
ORG in one sentence and PRODUCT in the next, a country GPE and ORG. A label outside this map is
a family of its own. Pairs whose families differ (a person and a place called Paris) are never
merged, nor shown to an LLM."""


def label_family(label: str) -> str:
    return LABEL_FAMILIES.get(label.casefold(), label.casefold())


def labels_compatible(a: str, b: str) -> bool:
    """Whether entities of these labels could be one thing: the same family, or one untyped."""
    return a == b or UNKNOWN_LABEL in (a, b) or label_family(a) == label_family(b)


class PassageSource(ABC):
    """Passages naming entities, for judges that read more than names (`passages.StorePassages`)."""

    @abstractmethod
    async def texts(self, ids: Collection[str], per_entity: int = 1) -> dict[str, list[str]]:
        """Entity id -> the text of up to `per_entity` passages naming it."""

    @abstractmethod
    async def snippets(self, ids: Collection[str]) -> dict[str, str]:
        """Entity id -> a stretch of one passage naming it, centred on the name."""


@dataclass
class Judgement:
    """A resolver's verdicts on the pairs it was given."""

    same: list[CandidatePair] = field(default_factory=list)
    different: list[CandidatePair] = field(default_factory=list)
    """Pairs judged two things."""
    unjudged: int = 0
    """Pairs left undecided: beyond a cap, held back by a token ceiling, or in an LLM call that failed."""
    held: int = 0
    """Of the undecided, pairs the token ceiling kept from being sent: not a failure of the LLM."""
    llm: LLMSpend | None = None
    failures: list[str] = field(default_factory=list)
    """Why some pairs were left undecided (an LLM call's error), once each."""


class GraphResolver(ABC):
    """Judges candidate pairs of the whole graph at finalize.

    Example::

        class NamesOnly(GraphResolver):
            name = "names-only"

            async def judge(self, pairs, entities, passages):
                return Judgement(same=[p for p in pairs if p.reason == "same"])
    """

    name: str = "custom"

    @property
    def blocks(self) -> bool:
        """Whether candidate pairs are looked for at all (`exact` needs none)."""
        return True

    @abstractmethod
    async def judge(
        self, pairs: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], passages: PassageSource
    ) -> Judgement:
        """Which of `pairs` (label-compatible, highest score first) are one entity; `passages`
        reads the passages naming an entity, at a store read per entity asked."""

    def clusters(self, judgement: Judgement, entities: Mapping[str, EntityRecord]) -> list[list[str]]:
        """Groups of entity ids to merge. By default a pair judged the same joins its two groups
        (a confirmation is a statement about the things, so it carries over), unless a pair
        across them was judged different: "A is B" and "B is C" do not override "A is not C"."""
        group: dict[str, set[str]] = {}
        apart = {frozenset((p.a, p.b)) for p in judgement.different}
        for p in judgement.same:
            ga, gb = group.get(p.a, {p.a}), group.get(p.b, {p.b})
            if ga is gb or any(frozenset((x, y)) in apart for x in ga for y in gb):
                continue
            joined = ga | gb
            for member in joined:
                group[member] = joined
        unique = {id(g): g for g in group.values()}
        return sorted(sorted(g) for g in unique.values())


class ExactGraphResolution(GraphResolver):
    """Merges nothing at finalize: entities with one normalised name and label already share an
    id since ingest. Finds no candidates either, so it costs nothing."""

    name = "exact"

    @property
    def blocks(self) -> bool:
        return False

    async def judge(
        self, pairs: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], passages: PassageSource
    ) -> Judgement:
        return Judgement(unjudged=len(pairs))


def survivor_of(group: Sequence[str], entities: Mapping[str, EntityRecord]) -> str:
    """The entity a group merges into: a typed one before an untyped one, then the one more
    passages mention (links and citations to it already exist), then the fuller name."""
    return min(
        group,
        key=lambda i: (entities[i].label == UNKNOWN_LABEL, -entities[i].mentions, -len(entities[i].name), i),
    )


def plan_merges(groups: Sequence[Sequence[str]], entities: Mapping[str, EntityRecord]) -> list[EntityMerge]:
    merges = []
    for group in groups:
        survivor = survivor_of(group, entities)
        merges.append(EntityMerge(survivor=survivor, merged=tuple(i for i in group if i != survivor)))
    return sorted(merges, key=lambda m: m.survivor)


class MergedEntity(BaseModel):
    """One merge made: who survived and whom it absorbed."""

    survivor: str = Field(description="entity id")
    name: str
    merged: list[str] = Field(description="merged-away entity ids, now redirected to the survivor")
    names: list[str] = Field(description="their names, now aliases of the survivor")


class ResolutionReport(BaseModel):
    """What resolution at finalize found, decided and changed."""

    resolver: str
    entities: int = 0
    compared: int = Field(0, description="pairs blocking scored: its cost, beside entities²/2 for comparing all")
    candidates: int = Field(0, description="candidate pairs blocking found")
    incompatible: int = Field(0, description="candidates left out: their labels cannot name one thing")
    judged: int = Field(0, description="candidates the resolver decided (for llm: sent to the LLM)")
    confirmed: int = Field(0, description="pairs judged one entity")
    rejected: int = Field(0, description="pairs judged two entities")
    unjudged: int = Field(0, description="pairs left undecided: over the cap or in a failed LLM call")
    merged: int = Field(0, description="entities folded into a survivor")
    mentions_moved: int = 0
    relations_moved: int = 0
    relations_folded: int = Field(0, description="relations joined with an equal one or dropped as self-relations")
    merges: list[MergedEntity] = Field(default_factory=list, description="the first merges made, at most 100")
    llm: LLMSpend | None = Field(None, description="LLM calls and tokens spent judging; None without an LLM")
    errors: list[str] = Field(default_factory=list, description="why some LLM calls failed")
