"""Retrieval recipes: which paths run, how their lists are weighed and how graph ranking joins in.

A recipe is data, so a variant of retrieval is a value a user writes (`RetrievalRecipe(...)`,
`recipe.vary(...)`) or names (`"fusion"`), not a fork of the retriever. The default
recipe's numbers are the ones measured on the dev sets of bench/retrieval.py; each field says
what its measurement was.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from evigraph.errors import ConfigurationError
from evigraph.retrieval.query import PATHS, SearchPath

FACT_WEIGHT = 0.5
"""The `fact_sources` list's weight: between the graph lists (0.05-0.1), which must not outvote
direct matches, and the direct ones (1-1.2), as a fact's vector is a direct match of one
sentence. The one value measured (`RetrievalRecipe.fact_vectors`), not tuned."""

PassageList = Literal["lexical", "semantic", "entity_mentions", "relation_sources", "fact_sources"]
"""The ranked lists of passages fusion weighs: full-text, vector, passages mentioning the entities
found, passages backing the relations and facts found, passages backing the facts nearest the
question by vector (`fact_vectors`)."""
PASSAGE_LISTS: tuple[str, ...] = get_args(PassageList)
DEFAULT_WEIGHTS = MappingProxyType(
    {"lexical": 1.0, "semantic": 1.2, "entity_mentions": 0.1, "relation_sources": 0.05, "fact_sources": FACT_WEIGHT}
)


class RetrievalRecipe(BaseModel):
    """How `MultiPathRetrieval` searches: its paths, fusion weights, pools and graph ranking."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field("custom", min_length=1, description="how results and errors refer to the recipe")
    paths: tuple[SearchPath, ...] = Field(
        PATHS, min_length=1, description="paths run when a query names none; a query's own paths win"
    )
    weights: Mapping[str, float] = Field(
        default_factory=lambda: DEFAULT_WEIGHTS,
        description=f"how much each passage list ({', '.join(PASSAGE_LISTS)}) counts in fusion; "
        "one left out keeps its default",
    )
    """Direct matches (words, meaning) lead; passages reached through named entities or their
    relations break ties and fill the list, but never outvote a direct match. Measured on the
    three multi-hop sets of bench/retrieval.py (grid: vector 1/1.2/1.5/2, graph 0/0.05/0.1,
    k 20/60; no held-out split, so small gaps are noise): graph weights of 0.35/0.25 cost 12
    points of recall@5 on hotpotqa, whose distractors name the same entities as the gold
    passages; vector 1.2 with graph 0.1/0.05 and k = 20 is the best setting with the embedder on
    all three sets and keeps every set above BM25 without it."""
    rrf_k: int = Field(20, ge=1, le=1000, description="reciprocal-rank fusion's k")
    """A smaller k than the usual 60 lets the top ranks of each list count more: the first few
    full-text and vector hits are where the gold passages of multi-hop questions sit."""
    pool_per_item: int = Field(3, ge=1, le=20, description="candidates each passage path fetches per item asked")
    min_pool: int = Field(20, ge=1, le=500, description="the least candidates each passage path fetches")
    graph_ranking: bool = Field(True, description="re-rank passages by the graph (needs an embedder)")
    graph_pool: int = Field(60, ge=1, le=1000, description="passages vector search returns for graph ranking")
    """Graph ranking's restart vector scales cosines over this many (as in the dev-set trials).
    Full-text keeps its usual pool: fetching 60 passage texts cost 2-3 ms a question and graph
    ranking does not read them."""
    hybrid_floor: int = Field(2, ge=0, le=50, description="fusion's best passages graph ranking keeps")
    """Two, because a multi-hop answer needs at least two passages and these are the ones fusion
    finds first; keeping them lifted recall@5 by 0.5 (2Wiki) and 1.7 (HotpotQA) points and cut the
    questions that rank worse than dense alone from 8 to 5 and 17 to 9; keeping three cost 2Wiki
    0.8 points."""
    label_cap: int = Field(3, ge=0, le=50, description="entities of one label listed before others get a turn (0: off)")
    document_cap: int = Field(
        2, ge=0, le=50, description="passages of one document listed before others get a turn (0: off)"
    )
    """Two, as a multi-hop answer needs two passages and one document rarely holds both hops;
    changelogs also wait behind guides (`diversity.py`)."""

    fact_vectors: bool = Field(
        False,
        description="with the facts path and an embedder, also find the relations whose facts are nearest "
        "the question by vector: their passages and entities join fusion",
    )
    """Off by default, by measurement (bench/retrieval.py, 2wikimultihopqa, MiniLM, all 200 dev
    questions, the `-facts` systems against the same knowledge base in the same run): recall@5
    92.2 with it against 92.4 under graph ranking (@1, @2, @10 equal), 72.9 against 70.9 under
    `fusion` but @1 41.4 against 42.4 and @10 76.2 against 76.5; p50 latency 1.07-1.10x."""

    @field_validator("paths")
    @classmethod
    def _distinct(cls, paths: tuple[SearchPath, ...]) -> tuple[SearchPath, ...]:
        return tuple(dict.fromkeys(paths))

    @field_validator("weights")
    @classmethod
    def _known_lists(cls, weights: Mapping[str, float]) -> Mapping[str, float]:
        unknown = sorted(set(weights) - set(PASSAGE_LISTS))
        if unknown:
            raise ValueError(f"no passage list is called {', '.join(unknown)}; weigh {', '.join(PASSAGE_LISTS)}")
        if any(w < 0 for w in weights.values()):
            raise ValueError("a weight is negative; use 0 to leave a list out of fusion")
        # A list left out keeps its measured default: read as 1, `{"semantic": 2.0}` would let the
        # graph lists outvote direct matches (the 12-point loss measured above).
        # Read-only, as the recipe is: the built-in recipes are copies of one another and would
        # otherwise share one dict, so a caller's edit of one would change them all.
        return MappingProxyType({**DEFAULT_WEIGHTS, **weights})

    @field_serializer("weights")
    def _plain_weights(self, weights: Mapping[str, float]) -> dict[str, float]:
        return dict(weights)

    def vary(self, **changes: Any) -> RetrievalRecipe:
        """This recipe with `changes`, checked as a new recipe is: `model_copy(update=...)` checks
        nothing, so weights left out would count 1 and a misspelt path would pass."""
        return RetrievalRecipe.model_validate({**self.model_dump(), **changes})

    def pool(self, top_k: int) -> int:
        """Candidates the full-text and vector searches fetch for `top_k` items."""
        return max(top_k * self.pool_per_item, self.min_pool)


DEFAULT_RECIPE = RetrievalRecipe(name="default")
RECIPES = MappingProxyType(
    {
        r.name: r
        for r in (
            DEFAULT_RECIPE,
            DEFAULT_RECIPE.vary(name="fusion", graph_ranking=False),
            DEFAULT_RECIPE.vary(name="passages", paths=("passages",), graph_ranking=False),
            DEFAULT_RECIPE.vary(name="local", paths=("passages", "exact_names", "links"), graph_ranking=False),
        )
    }
)
"""The built-in recipes by name: `default` (every path, fused, then graph ranking), `fusion` (every
path, fused ranks only: no embedder-bound graph stage), `passages` (full-text and vector passages
only: the cheapest), `local` (passages plus the entities the question names and their one-hop
relations, the reference's local retrieval)."""


def recipe_by_name(name: str) -> RetrievalRecipe:
    found = RECIPES.get(name.strip().lower())
    if found is None:
        raise ConfigurationError(f"unknown retrieval recipe {name!r}", hint=f"use one of: {', '.join(RECIPES)}")
    return found
