"""Chunkers turn a loaded document into cited passages; `chunker_by_name` maps CLI names to them."""

from __future__ import annotations

from collections.abc import Callable

from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.chunking.callable import CallableChunking
from evigraph.ingest.chunking.fixed import FixedSizeChunking
from evigraph.ingest.chunking.sentence import SentenceTokenCapChunking
from evigraph.ingest.chunking.structural import StructuralChunking

_BY_NAME: dict[str, Callable[[], ChunkingStrategy]] = {
    "fixed": FixedSizeChunking,
    "sentence": SentenceTokenCapChunking,
    "structural": StructuralChunking,
}


def chunker_by_name(name: str) -> ChunkingStrategy:
    """A chunker with default settings, for options given as a plain name (CLI, config files)."""
    factory = _BY_NAME.get(name.strip().lower())
    if factory is None:
        valid = ", ".join(sorted(_BY_NAME))
        raise ConfigurationError(f"unknown chunker {name!r}", f"use one of: {valid}")
    return factory()


__all__ = [
    "CallableChunking",
    "ChunkingStrategy",
    "FixedSizeChunking",
    "SentenceTokenCapChunking",
    "StructuralChunking",
    "chunker_by_name",
]
