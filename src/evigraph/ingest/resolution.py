"""Entity resolution: merge the entities that are one thing.

Resolution runs per document at ingest (exact by default; `llm_verified`, in `llm_resolution`,
also maps a document's new names onto entities the graph holds, as an LLM confirms) and across
the whole graph at finalize (`graph_resolution`: candidate pairs by blocking, judged by names or
by an LLM).
A merge made at finalize is recorded by the store, which re-points the merged-away id in every
later write, so an ingest never splits what finalize joined.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from evigraph.errors import ConfigurationError
from evigraph.lazy import lazy_callable
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.ingest.extraction.budget import TokenBudget
    from evigraph.models import GraphData, TextChunk
    from evigraph.providers.embedders import Embedder
    from evigraph.providers.llms import LLM
    from evigraph.resolution_records import IngestResolution
    from evigraph.store.base import GraphStore


def _no_ceiling() -> TokenBudget:
    from evigraph.ingest.extraction.budget import TokenBudget

    return TokenBudget()


@dataclass(frozen=True)
class ResolutionRun:
    """What one ingest lends its resolver: the graph to resolve against, and what judging may use
    and spend. The LLM is asked for only by a resolver that needs one, as building it may fail
    where an offline ingest must not."""

    store: GraphStore | None = None
    llm: Callable[[], LLM | None] = lambda: None
    embedder: Embedder | None = None
    budget: TokenBudget = field(default_factory=_no_ceiling)
    """The ingest's LLM token ceiling and spend, shared with extraction."""
    max_llm_pairs: int | None = None
    """Candidate pairs the whole ingest call may send to an LLM (an agent's plan limit); None: the resolver's own."""


def checked_max_llm_pairs(value: int | None) -> int | None:
    """`value` if it is a pair budget (None: no cap of the caller's own), else `ConfigurationError`.

    Every way in (the resolver, an ingest call, an agent's plan limits) goes through here, so a
    negative count cannot slip through one of them as "send them all" (`asked[:-1]`) or become 0
    in another."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(
            f"max_llm_pairs must be a whole number of pairs, 0 or more, not {value!r}",
            hint="e.g. max_llm_pairs=500; 0 sends none and maps only names the graph already holds",
        )
    return value


class ResolutionStrategy(ABC):
    """Deduplicates entities and re-points relations and mentions at the survivors."""

    name: str = "custom"

    @abstractmethod
    async def resolve(self, graph: GraphData) -> GraphData: ...

    def for_run(self, run: ResolutionRun) -> ResolutionStrategy:
        """The resolver one ingest uses: one that reads the graph or asks a model returns a copy
        bound to `run`, so concurrent ingests keep their own state and accounts; others return
        themselves. Raise `ConfigurationError` here for what is missing, before anything is written."""
        return self

    async def resolve_document(self, key: str, graph: GraphData, chunks: Sequence[TextChunk]) -> GraphData:
        """`resolve` for the document `key`, whose passages are `chunks`: a resolver that reports
        per document or shows a model where a name is written overrides this; by default `resolve`."""
        return await self.resolve(graph)

    def summary(self) -> IngestResolution | None:
        """What this run's resolving did, for `IngestReport.resolution`; None: nothing to say."""
        return None


class ExactMatchResolution(ResolutionStrategy):
    """Merges entities with the same (normalised name, label), which is exactly their id.

    The survivor keeps every description and every surface form as an alias; relations and
    mentions are re-pointed (a no-op for exact ids) and duplicates among them are folded.
    """

    name = "exact"

    async def resolve(self, graph: GraphData) -> GraphData:
        return resolve_exact(graph)


RESOLVERS: Registry[ResolutionStrategy] = Registry("resolver")
RESOLVERS.register(
    "exact",
    ExactMatchResolution,
    description="merge entities whose normalised name and label match; local, instant",
)
RESOLVERS.register(
    "llm_verified",
    lazy_callable("evigraph.ingest.llm_resolution", "LLMVerifiedResolution"),
    description="exact match, then each new name's candidates in the graph (blocking, and name vectors with "
    "an embedder) confirmed by the LLM, 16 pairs per call (at most max_llm_pairs); costs LLM tokens",
    cheap=False,
)

ResolverName = Annotated[str, RESOLVERS.enum_schema()]
"""A resolver's name in an input model: its JSON Schema lists the registered resolvers."""


def resolver_by_name(name: str) -> ResolutionStrategy:
    """The resolver a configuration or an agent's plan names; unknown names are refused with the choices."""
    return RESOLVERS.create(name)


def resolve_exact(graph: GraphData) -> GraphData:
    """Entities with one id (normalised name and label) folded into one; see `fold_graph`."""
    from evigraph.graphdata import fold_graph

    return fold_graph(graph)
