"""The store contract's section for typing again at finalize: reading back what extraction found
in each passage before typing, and replacing a document's graph while its passages stay.

Apart from `base` so that module stays one size. Why typing runs again is in
`ingest/extraction/found_hits.py`; the step itself is `ingest/retyping.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from evigraph.models import GraphData, Span


@dataclass(frozen=True)
class FoundPassage:
    index: int
    text: str
    found: str
    """What extraction found before typing (`found_hits.encode_hits`)."""


@dataclass(frozen=True)
class FoundDocument:
    """A document's current version as finalize types it again: every passage keeps its found names."""

    key: str
    version: int
    title: str
    passages: tuple[FoundPassage, ...]


@dataclass(frozen=True)
class FoundPage:
    documents: list[FoundDocument]
    next: str | None
    """The key to read on from (`found_documents(after=...)`); None: every document was read."""


@dataclass(frozen=True)
class DocumentGraph:
    """The graph one version of a document should have, its passages unchanged."""

    key: str
    version: int
    graph: GraphData
    indexes: tuple[int, ...]
    """The document's passages, by index."""
    sentences: tuple[tuple[Span, ...], ...]
    """Per passage of `indexes`, its bridge sentences (`ingest/bridges.py`), which follow the mentions."""


class GraphRewriteStore(ABC):
    @abstractmethod
    async def found_documents(self, after: str | None, limit: int) -> FoundPage:
        """Of the next `limit` documents by key after `after` (None: from the first), those whose
        every passage kept what extraction found; others (an LLM's extraction, a file written
        before passages kept it) are skipped, as typing again would not reproduce their graph."""

    @abstractmethod
    async def replace_graphs(self, graphs: Sequence[DocumentGraph]) -> list[str]:
        """Give each document the graph given, keeping its passages, vectors and version; returns
        the keys whose graph changed.

        A document whose graph is already the one given (its mentions, after the merges finalize
        made, are the same entities at the same places) is left alone, so a finalize with nothing
        new types everything and writes nothing. A document no longer at the version given (a
        write since it was read) is left alone too: that write's graph is newer. Mentions,
        extracted relations' sources and bridge sentences of a changed document are replaced;
        entities and relations left without a mention or a source go, unless an agent recorded
        them or gave them properties; bridge sentences that changed lose their vectors, which the
        next embedding pass (`finalize`) computes. Passage ids stay, so evidence cited before
        still resolves, and no decision is flagged: the documents' words did not change.
        """
