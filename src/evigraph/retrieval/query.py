"""`RetrieveInput`: the one declaration of what `retrieve` takes.

`KnowledgeBase.retrieve`, the `retrieve` tool (and so MCP and REST) and `evigraph search` all
take this model, so a bound or a default cannot drift between them: the CLI builds its options
from these fields, the tool registry publishes its JSON Schema.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator

from evigraph.limits import DEFAULT_LIMITS, Hits
from evigraph.strict import StrictInput

SearchPath = Literal["passages", "exact_names", "fuzzy_names", "links", "facts"]
PATHS: tuple[SearchPath, ...] = get_args(SearchPath)
Ranking = Literal["graph", "fusion"]
RANKINGS: tuple[str, ...] = get_args(Ranking)
MAX_HOPS = 5


def query_hint(max_hits: int = DEFAULT_LIMITS.max_hits) -> str:
    """What a caller needs to fix a refused query, said by every surface that takes one; top_k's
    bound is the operator's max_hits, so the hint names the number the check used."""
    return (
        f"paths: choose from {', '.join(PATHS)}; top_k: 1-{max_hits}; expand_hops: 1-{MAX_HOPS}; "
        f"ranking: {' or '.join(RANKINGS)}"
    )


HINT = query_hint()
"""The hint at the default limits (the CLI's, which serves no operator limits)."""


class RetrieveInput(StrictInput):
    question: str = Field(min_length=1, max_length=2000, description="the user's question, word for word")
    paths: list[SearchPath] | None = Field(
        None, min_length=1, description=f"search paths to run ({', '.join(PATHS)}); all when omitted"
    )
    top_k: Hits = Field(10, description="items per section")
    expand_hops: int = Field(1, ge=1, le=MAX_HOPS, description="how far `links` walks from the entities found")
    ranking: Ranking = Field(
        "graph",
        description="graph: re-rank passages by PageRank from the question's entities (needs an embedder); "
        "fusion: full-text and vector ranks only",
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty; pass the question text")
        return value

    def chosen_paths(self) -> list[SearchPath]:
        return list(PATHS) if self.paths is None else list(dict.fromkeys(self.paths))
