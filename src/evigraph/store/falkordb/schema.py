"""The FalkorDB graph schema: labels, the indexes every look-up needs, and the mark of a knowledge base.

The labels and properties are the embedded store's (`store/embedded/schema.py`), so an agent's
Cypher reads the same on both, but for `source_chunks`, a list here (`CYPHER_GUIDE`). FalkorDB
creates labels on first use; what
must exist up front are the indexes: without a range index a `MATCH (c:Chunk {id: $id})` scans
every chunk. The code labels have the server's full-text indexes (RediSearch); passages and
entities are searched in process (`bm25`); the vector index is created once the embedding
model's dimension is known (`vector_index`).

A passage is `live` once its document's version switch has committed (`documents.py`): readers
filter on it, so a version being written is never half visible. Until then it is a
`PendingChunk` (`PENDING_CHUNK`), carrying `_writer`, the lease of the write that put it aside
(`leases.py`). Entities, mentions and relations need no mark: the switch writes them.
"""

from __future__ import annotations

from evigraph.store.core.schema_names import (
    CODE_NODE_TABLES,
    CODE_REL_TABLES,
    ENTITY_REDIRECT,
    EXTRACTION_CACHE,
    META_TABLE,
    TRACE_LOOKUPS,
    TRACE_TABLES,
    VERSION_SEQ,
)
from evigraph.store.core.schema_names import (
    CYPHER_GUIDE as EMBEDDED_GUIDE,
)

__all__ = ["CYPHER_GUIDE", "SCHEMA_VERSION", "TRACE_TABLES", "VERSION_SEQ"]

SCHEMA_VERSION = "1"

CYPHER_GUIDE = EMBEDDED_GUIDE.replace(
    "(the ids of the passages stating it, separated by spaces: string_split(r.source_chunks, ' '))",
    "(a list of the ids of the passages stating it)",
)
"""The embedded guide but for `source_chunks`: lists on relationships cost FalkorDB nothing, while
the embedded engine keeps them as text (`store/embedded/packed.py`)."""
PENDING_CHUNK = "PendingChunk"
"""The label of a passage written aside (`documents.py`): its switch copies it into a `Chunk`, so no
reader, agent Cypher included, meets a passage of a version not switched in."""

RANGE_INDEXES: tuple[tuple[str, str], ...] = (
    (META_TABLE, "key"),
    ("Document", "key"),
    ("Chunk", "id"),
    ("Chunk", "document"),
    (PENDING_CHUNK, "id"),
    (PENDING_CHUNK, "document"),
    ("Entity", "id"),
    ("Entity", "name"),
    ("SourceLog", "key"),
    ("SourceLog", "state"),
    ("Theme", "id"),
    (EXTRACTION_CACHE, "key"),
    (ENTITY_REDIRECT, "id"),
    (VERSION_SEQ, "key"),
    *TRACE_LOOKUPS,
    ("Repo", "id"),
    ("Module", "id"),
    ("Module", "name"),
    ("Class", "id"),
    ("Function", "id"),
)
EDGE_INDEXES: tuple[tuple[str, str], ...] = (("RELATES", "id"),)

RETIRED_FULLTEXT = ("Chunk", "Entity", "Module", "Class", "Function")
"""Labels whose server full-text index an earlier release kept, dropped at a writable open: they
are searched by the in-process index of `bm25`, which scores BM25 as the embedded store does (the
server's index ranks by raw term counts), and every write paid to keep them."""

VECTOR_EF_RUNTIME = 200
"""The HNSW search breadth. The server's default (10) found 62 % of the exact nearest passages in
a probe; vector search must match the embedded store's exact scan on the bench."""

NODE_LABELS = frozenset(
    {META_TABLE, "Document", "Chunk", PENDING_CHUNK, "Entity", "SourceLog", "Theme", EXTRACTION_CACHE, ENTITY_REDIRECT}
    | {VERSION_SEQ}
    | TRACE_TABLES
    | CODE_NODE_TABLES
)
RELATIONSHIP_TYPES = frozenset({"PART_OF", "NEXT", "MENTIONED_IN", "RELATES"} | CODE_REL_TABLES)
"""Every relationship type the schema defines. The server knows a type only once an edge has it,
so `schema_tables` lists these (and `NODE_LABELS`) whether or not one exists yet, as the embedded
store lists its empty tables: an agent reading the ontology before any code is ingested still
sees the code tables the Cypher guide names."""
INTERNAL_LABELS = frozenset(
    {META_TABLE, "SourceLog", "Theme", EXTRACTION_CACHE, ENTITY_REDIRECT, VERSION_SEQ, PENDING_CHUNK} | TRACE_TABLES
)


def index_statements(existing: set[tuple[str, str]]) -> list[str]:
    """The index creations a graph still lacks, given its (label, property) pairs already indexed."""
    out = [
        f"CREATE INDEX FOR (n:{label}) ON (n.{prop})" for label, prop in RANGE_INDEXES if (label, prop) not in existing
    ]
    out += [
        f"CREATE INDEX FOR ()-[r:{rel}]-() ON (r.{prop})" for rel, prop in EDGE_INDEXES if (rel, prop) not in existing
    ]
    return out


def vector_index(dimension: int) -> str:
    return (
        f"CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) OPTIONS {{dimension: {int(dimension)}, "
        f"similarityFunction: 'cosine', efRuntime: {VECTOR_EF_RUNTIME}}}"
    )
