"""Resolution at finalize: merge the entities of the whole graph that are one thing.

`GRAPH_RESOLVERS` names the built-in judges for `evigraph finalize --resolver` and
`kb.finalize(resolver=...)`: `exact` (nothing beyond ingest's exact match), `fuzzy` (names,
offline) and `llm` (an LLM confirms candidate pairs in batches). Classes load on first use, so
the CLI reads the names without importing pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

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


def _llm_resolver(*, llm: LLM | None = None, max_pairs: int | None = None) -> GraphResolver:
    if llm is None:
        raise ConfigurationError(
            "the llm resolver needs an LLM",
            hint="pass --llm openai:MODEL (with EVIGRAPH_LLM_BASE_URL and EVIGRAPH_LLM_API_KEY as needed), "
            "KnowledgeBase(llm=...) in Python, or use --resolver fuzzy offline",
        )
    from evigraph.ingest.graph_resolution.llm import MAX_LLM_PAIRS, LLMGraphResolution

    return LLMGraphResolution(llm, max_pairs=MAX_LLM_PAIRS if max_pairs is None else max_pairs)


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


GraphResolverName = Annotated[str, GRAPH_RESOLVERS.enum_schema()]
"""A finalize resolver's name in an input model: its JSON Schema lists the registered ones."""


def graph_resolver_by_name(name: str, *, llm: LLM | None = None, max_pairs: int | None = None) -> GraphResolver:
    """The resolver `name` names, given the LLM and the most pairs it may send for those that ask
    one (None: its own default); unknown names are refused with the choices."""
    entry = GRAPH_RESOLVERS.get(name)
    if entry.factory is _llm_resolver:
        return GRAPH_RESOLVERS.create(name, llm=llm, max_pairs=max_pairs)
    return GRAPH_RESOLVERS.create(name)


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
    "GraphResolverName",
    "Judgement",
    "LLMGraphResolution",
    "MergedEntity",
    "ResolutionReport",
    "graph_resolver_by_name",
    "resolve_graph",
]
