"""Resolution at finalize: merge the entities of the whole graph that are one thing.

`GRAPH_RESOLVERS` names the built-in judges for `evigraph finalize --resolver` and
`kb.finalize(resolver=...)`: `exact` (nothing beyond ingest's exact match), `fuzzy` (names,
offline) and `llm` (an LLM confirms candidate pairs in batches). Classes load on first use, so
the CLI reads the names without importing pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.errors import ConfigurationError
from evigraph.lazy import lazy_callable, lazy_exports
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.ingest.graph_resolution.base import (
        ExactGraphResolution,
        GraphResolver,
        Judgement,
        MergedEntity,
        ResolutionReport,
    )
    from evigraph.ingest.graph_resolution.fuzzy import FuzzyGraphResolution
    from evigraph.ingest.graph_resolution.llm import LLMGraphResolution
    from evigraph.ingest.graph_resolution.run import resolve_graph
    from evigraph.providers.llms import LLM


def _llm_resolver(*, llm: LLM | None = None) -> GraphResolver:
    if llm is None:
        raise ConfigurationError(
            "the llm resolver needs an LLM",
            hint="pass --llm openai:MODEL (with EVIGRAPH_LLM_BASE_URL and EVIGRAPH_LLM_API_KEY as needed), "
            "KnowledgeBase(llm=...) in Python, or use --resolver fuzzy offline",
        )
    from evigraph.ingest.graph_resolution.llm import LLMGraphResolution

    return LLMGraphResolution(llm)


GRAPH_RESOLVERS: Registry[GraphResolver] = Registry("resolver")
GRAPH_RESOLVERS.register(
    "exact",
    lazy_callable("evigraph.ingest.graph_resolution.base", "ExactGraphResolution"),
    description="no merges beyond ingest's exact name-and-label match; free",
)
GRAPH_RESOLVERS.register(
    "fuzzy",
    lazy_callable("evigraph.ingest.graph_resolution.fuzzy", "FuzzyGraphResolution"),
    description="merge candidate pairs whose names match (typos, initials, acronyms, company suffixes); "
    "local, seconds for tens of thousands of entities",
)
GRAPH_RESOLVERS.register(
    "llm",
    _llm_resolver,
    description="an LLM confirms candidate pairs, 16 per call (at most 2,000 pairs); costs LLM tokens",
    cheap=False,
)


def graph_resolver_by_name(name: str, *, llm: LLM | None = None) -> GraphResolver:
    """The resolver `name` names, given the LLM for those that ask one; unknown names are refused
    with the choices."""
    entry = GRAPH_RESOLVERS.get(name)
    return GRAPH_RESOLVERS.create(name, llm=llm) if entry.factory is _llm_resolver else GRAPH_RESOLVERS.create(name)


__getattr__ = lazy_exports(
    __name__,
    {
        "GraphResolver": "evigraph.ingest.graph_resolution.base",
        "ExactGraphResolution": "evigraph.ingest.graph_resolution.base",
        "Judgement": "evigraph.ingest.graph_resolution.base",
        "MergedEntity": "evigraph.ingest.graph_resolution.base",
        "ResolutionReport": "evigraph.ingest.graph_resolution.base",
        "FuzzyGraphResolution": "evigraph.ingest.graph_resolution.fuzzy",
        "LLMGraphResolution": "evigraph.ingest.graph_resolution.llm",
        "resolve_graph": "evigraph.ingest.graph_resolution.run",
    },
)

__all__ = [
    "GRAPH_RESOLVERS",
    "ExactGraphResolution",
    "FuzzyGraphResolution",
    "GraphResolver",
    "Judgement",
    "LLMGraphResolution",
    "MergedEntity",
    "ResolutionReport",
    "graph_resolver_by_name",
    "resolve_graph",
]
