"""Chunkers turn a loaded document into cited passages; `CHUNKERS` names the built-in ones.

The classes are imported on first use: the CLI reads the chunker names for its choices and
must not load pydantic to do so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from evigraph.lazy import lazy_callable, lazy_exports
from evigraph.strategies import Registry

if TYPE_CHECKING:
    from evigraph.ingest.chunking.base import ChunkingStrategy
    from evigraph.ingest.chunking.callable import CallableChunking
    from evigraph.ingest.chunking.contextual import ContextualChunking
    from evigraph.ingest.chunking.fixed import FixedSizeChunking
    from evigraph.ingest.chunking.sentence import SentenceTokenCapChunking
    from evigraph.ingest.chunking.structural import StructuralChunking

CHUNKERS: Registry[ChunkingStrategy] = Registry("chunker")
CHUNKERS.register(
    "fixed",
    lazy_callable("evigraph.ingest.chunking.fixed", "FixedSizeChunking"),
    description="fixed-size windows; cheapest, ignores structure",
)
CHUNKERS.register(
    "sentence",
    lazy_callable("evigraph.ingest.chunking.sentence", "SentenceTokenCapChunking"),
    description="sentence-aligned passages of a token cap; best for prose",
)
CHUNKERS.register(
    "structural",
    lazy_callable("evigraph.ingest.chunking.structural", "StructuralChunking"),
    description="follows headings, lists and tables (Markdown, PDF pages); best for structured files",
)
CHUNKERS.register(
    "contextual",
    lazy_callable("evigraph.ingest.chunking.contextual", "ContextualChunking"),
    description="structural passages, each with a one-sentence context an LLM writes from its document, "
    "searched and embedded with the passage but never shown as its text; needs an LLM (--llm or "
    "EVIGRAPH_LLM_MODEL); about 1 call per 6 passages and 400 tokens per passage, cached by passage",
    cheap=False,
    check=lazy_callable("evigraph.ingest.extraction", "_need_llm_client"),
)

ChunkerName = Annotated[str, CHUNKERS.enum_schema()]
"""A chunker's name in an input model: its JSON Schema lists the registered chunkers."""


def chunker_by_name(name: str) -> ChunkingStrategy:
    """A chunker with default settings, for options given as a plain name (CLI, config files)."""
    return CHUNKERS.create(name)


__getattr__ = lazy_exports(
    __name__,
    {
        "ChunkingStrategy": "evigraph.ingest.chunking.base",
        "CallableChunking": "evigraph.ingest.chunking.callable",
        "ContextualChunking": "evigraph.ingest.chunking.contextual",
        "FixedSizeChunking": "evigraph.ingest.chunking.fixed",
        "SentenceTokenCapChunking": "evigraph.ingest.chunking.sentence",
        "StructuralChunking": "evigraph.ingest.chunking.structural",
    },
)

__all__ = [
    "CHUNKERS",
    "CallableChunking",
    "ChunkerName",
    "ChunkingStrategy",
    "ContextualChunking",
    "FixedSizeChunking",
    "SentenceTokenCapChunking",
    "StructuralChunking",
    "chunker_by_name",
]
