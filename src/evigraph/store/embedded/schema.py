"""The embedded graph schema, created once per knowledge base and checked at every open.

A meta table marks a database as evigraph's, so a stranger's Kuzu file is refused instead of
being altered, and records the schema version for future migrations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.code_records import LINK_TYPES, link_ends
from evigraph.property_types import SOURCES_COLUMN
from evigraph.store.core.schema_names import (
    CODE_NODE_TABLES,
    CODE_REL_TABLES,
    CONTEXT_COLUMN,
    ENTITY_REDIRECT,
    EXTRACTION_CACHE,
    EXTRACTION_SOURCE,
    FOUND_COLUMN,
    META_TABLE,
    STEP_SUPPORTS,
    TRACE_DECISION,
    TRACE_EVENT,
    TRACE_REQUEST,
    TRACE_REVIEW,
    TRACE_STEP,
    TRACE_SUPPORT,
    TRACE_TABLES,
    TRACE_TASK,
    VERSION_SEQ,
)

if TYPE_CHECKING:
    from evigraph.code_records import SymbolKind

__all__ = [
    "CODE_NODE_TABLES",
    "CODE_REL_TABLES",
    "CONTEXT_COLUMN",
    "ENTITY_REDIRECT",
    "EXTRACTION_CACHE",
    "EXTRACTION_SOURCE",
    "FOUND_COLUMN",
    "META_TABLE",
    "STEP_SUPPORTS",
    "TRACE_DECISION",
    "TRACE_EVENT",
    "TRACE_REQUEST",
    "TRACE_REVIEW",
    "TRACE_STEP",
    "TRACE_SUPPORT",
    "TRACE_TABLES",
    "TRACE_TASK",
    "VERSION_SEQ",
]

SCHEMA_VERSION = "1"

CHUNK_FTS = "chunk_text_fts"
ENTITY_FTS = "entity_name_fts"
CODE_FTS: dict[SymbolKind, str] = {
    "Module": "module_text_fts",
    "Class": "class_text_fts",
    "Function": "function_text_fts",
}
"""The full-text indexes an earlier release kept over code symbols, one per node table (retired)."""

_CODE_COLUMNS = (
    "id STRING PRIMARY KEY, repo STRING, path STRING, module STRING, name STRING, qualname STRING, "
    "language STRING, signature STRING, docstring STRING, line_start INT64, line_end INT64"
)

DDL = (
    f"CREATE NODE TABLE IF NOT EXISTS {META_TABLE}(key STRING PRIMARY KEY, value STRING)",
    """CREATE NODE TABLE IF NOT EXISTS Document(
        key STRING PRIMARY KEY, title STRING, path STRING, content_hash STRING, version INT64,
        loader STRING, metadata STRING, chunk_count INT64, ingested_at TIMESTAMP)""",
    f"""CREATE NODE TABLE IF NOT EXISTS Chunk(
        id STRING PRIMARY KEY, document STRING, version INT64, `index` INT64, text STRING,
        breadcrumbs STRING[], page INT64, char_start INT64, char_end INT64, embedding FLOAT[],
        search_text STRING, sentence_starts INT64[], sentence_ends INT64[], sentence_vectors FLOAT[][],
        passage_context STRING, {FOUND_COLUMN} STRING)""",
    """CREATE NODE TABLE IF NOT EXISTS Entity(
        id STRING PRIMARY KEY, name STRING, label STRING, description STRING,
        descriptions STRING[], aliases STRING[], _source STRING, _created_at TIMESTAMP,
        search_text STRING, embedding FLOAT[], _property_sources STRING)""",
    "CREATE REL TABLE IF NOT EXISTS PART_OF(FROM Chunk TO Document)",
    "CREATE REL TABLE IF NOT EXISTS NEXT(FROM Chunk TO Chunk)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONED_IN(FROM Entity TO Chunk, span_starts STRING, span_ends STRING)",
    """CREATE REL TABLE IF NOT EXISTS RELATES(FROM Entity TO Entity, id STRING, type STRING, fact STRING,
        confidence DOUBLE, _source STRING, _property_sources STRING, source_chunks STRING, embedding FLOAT[])""",
    """CREATE NODE TABLE IF NOT EXISTS SourceLog(
        key STRING PRIMARY KEY, state STRING, content_hash STRING, version INT64, error STRING, at TIMESTAMP)""",
    """CREATE NODE TABLE IF NOT EXISTS Theme(
        id STRING PRIMARY KEY, members STRING[], names STRING[], labels STRING[], size INT64, run STRING)""",
    f"CREATE NODE TABLE IF NOT EXISTS {EXTRACTION_CACHE}(key STRING PRIMARY KEY, value STRING)",
    f"""CREATE NODE TABLE IF NOT EXISTS {ENTITY_REDIRECT}(
        id STRING PRIMARY KEY, survivor STRING, name STRING, at TIMESTAMP)""",
    f"CREATE NODE TABLE IF NOT EXISTS {VERSION_SEQ}(key STRING PRIMARY KEY, n INT64)",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_TASK}(
        id STRING PRIMARY KEY, project STRING, name STRING, goal STRING, agent STRING, created_at TIMESTAMP,
        events INT64)""",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_EVENT}(
        id STRING PRIMARY KEY, task STRING, seq INT64, kind STRING, role STRING, name STRING, agent STRING,
        at TIMESTAMP, payload STRING, chars INT64, sha256 STRING, truncated BOOLEAN)""",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_STEP}(
        id STRING PRIMARY KEY, task STRING, name STRING, state STRING, kind STRING, result_basis STRING,
        result_event_seq INT64, agent STRING, updated_at TIMESTAMP, supports STRING)""",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_REQUEST}(
        id STRING PRIMARY KEY, fingerprint STRING, result STRING, at TIMESTAMP)""",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_DECISION}(
        id STRING PRIMARY KEY, project STRING, task STRING, choice_key STRING, conclusion STRING,
        rationale STRING, assumptions STRING[], open_questions STRING[], state STRING, agent STRING,
        created_at TIMESTAMP, updated_at TIMESTAMP, supersedes STRING, superseded_by STRING,
        explanation STRING, review STRING, supports INT64, embedding FLOAT[])""",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_SUPPORT}(
        id STRING PRIMARY KEY, project STRING, decision STRING, ordinal INT64, kind STRING, ref STRING,
        document STRING, version INT64, content_hash STRING, note STRING, origin STRING, current BOOLEAN,
        agent STRING, added_at TIMESTAMP)""",
    f"""CREATE NODE TABLE IF NOT EXISTS {TRACE_REVIEW}(
        id STRING PRIMARY KEY, project STRING, decision STRING, at TIMESTAMP)""",
    "CREATE NODE TABLE IF NOT EXISTS Repo(id STRING PRIMARY KEY, name STRING, root STRING)",
    f"""CREATE NODE TABLE IF NOT EXISTS Module({_CODE_COLUMNS}, content_hash STRING, imports STRING[],
        import_aliases STRING[], search_text STRING)""",
    f"CREATE NODE TABLE IF NOT EXISTS Class({_CODE_COLUMNS}, bases STRING[], search_text STRING)",
    f"CREATE NODE TABLE IF NOT EXISTS Function({_CODE_COLUMNS}, calls STRING[], search_text STRING)",
    *(
        f"CREATE REL TABLE IF NOT EXISTS {kind}({', '.join(f'FROM {a} TO {b}' for a, b in link_ends(kind))})"
        for kind in LINK_TYPES
    ),
)

FACT_COLUMN = ("RELATES", "embedding", "FLOAT[]")
"""Relations' fact vectors (the `facts` path's vector search, `RetrievalRecipe.fact_vectors`)."""

ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Chunk", "sentence_starts", "INT64[]"),
    ("Chunk", "sentence_ends", "INT64[]"),
    ("Chunk", "sentence_vectors", "FLOAT[][]"),
    ("Entity", "embedding", "FLOAT[]"),
    ("Chunk", CONTEXT_COLUMN, "STRING"),
    (TRACE_STEP, STEP_SUPPORTS, "STRING"),
    ("Entity", SOURCES_COLUMN, "STRING"),
    ("RELATES", SOURCES_COLUMN, "STRING"),
    FACT_COLUMN,
    ("Chunk", FOUND_COLUMN, "STRING"),
)
"""(table, column, type) added after schema version 1 shipped: graph ranking's bridge sentences and
name vectors, then contextual chunks' contexts, then steps' supports, then who set each declared
property (`evigraph.property_types`; the properties' own columns come with their declaration),
then relations' fact vectors, then the names extraction found before typing (`found_hits`). A
writable open adds what a file lacks (`ALTER TABLE ... ADD`); its rows then get them from `evigraph
finalize` (vectors, like any passage without one) or a re-ingest (contexts, found names); a step
set before has no supports."""

RETYPED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("RELATES", "source_chunks", "STRING"),
    ("MENTIONED_IN", "span_starts", "STRING"),
    ("MENTIONED_IN", "span_ends", "STRING"),
)
"""(table, column, type) whose type changed after schema version 1 shipped: lists on relationships
became space-separated text (`packed`). A writable open converts a file that still has the lists."""

TABLES = frozenset(
    {META_TABLE, "Document", "Chunk", "Entity", "PART_OF", "NEXT", "MENTIONED_IN", "RELATES", "SourceLog", "Theme"}
    | {EXTRACTION_CACHE, ENTITY_REDIRECT, VERSION_SEQ}
    | TRACE_TABLES
    | CODE_NODE_TABLES
    | CODE_REL_TABLES
)
"""Every table evigraph creates; tables added by a later release are created on a writable open."""

NODE_TABLES = frozenset(
    {META_TABLE, "Document", "Chunk", "Entity", "SourceLog", "Theme", EXTRACTION_CACHE, ENTITY_REDIRECT, VERSION_SEQ}
    | TRACE_TABLES
    | CODE_NODE_TABLES
)

INTERNAL_TABLES = frozenset(
    {META_TABLE, "SourceLog", "Theme", EXTRACTION_CACHE, ENTITY_REDIRECT, VERSION_SEQ} | TRACE_TABLES
)
"""Bookkeeping tables: not part of the knowledge graph an agent queries."""

RETIRED_FTS_INDEXES = {CHUNK_FTS: "Chunk", ENTITY_FTS: "Entity", **{name: table for table, name in CODE_FTS.items()}}
"""Full-text indexes an earlier release kept, dropped at a writable open: every write paid to keep
them, no read uses them any more (passages, entities and code symbols are searched by the
in-process index of `bm25`; a knowledge base keeps no engine full-text index). The code indexes
also took most of a code graph's file: this repository's src/ (2.1 MB of Python) grew the file
by 35 MB more with them than without."""
