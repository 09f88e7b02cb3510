"""What a batch carries from one stage of the ingest pipeline (`pipeline.IngestRun`) to the next."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from evigraph.ingest.passage_vectors import DocumentVectors
from evigraph.models import GraphData, LoadedDocument, Span, TextChunk


@dataclass
class Pending:
    """A document admitted to this run; `existed`: a version of it is stored already."""

    doc: LoadedDocument
    existed: bool


@dataclass
class Started:
    """A batch chunked, its graphs extracting (`IngestRun._start`)."""

    chunked: list[tuple[Pending, list[TextChunk]]]
    graphs: asyncio.Task[Extracted]


@dataclass
class Extracted:
    """A batch's graphs (None where a document was not extracted), and whether its extraction
    ran in this process (not in the worker, `offload`): only then did it leave temporaries here."""

    graphs: list[GraphData | None]
    here: bool


@dataclass
class Embedding:
    """A batch extracted and resolved, its vectors being computed (`IngestRun._process`)."""

    ready: list[tuple[Pending, list[TextChunk], GraphData, tuple[tuple[Span, ...], ...]]]
    vectors: asyncio.Task[list[DocumentVectors]] | None  # None without an embedder
