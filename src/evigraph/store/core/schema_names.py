"""Names of the tables (labels) and columns every store shares, and what free-form Cypher may read.

Both backends build the same graph; these names are its vocabulary, kept apart from either
backend's DDL so the Cypher guard and the backends agree on them without one backend importing the
other.
"""

from __future__ import annotations

import json

from evigraph.code_records import CODE_LABELS, CODE_QUERIES, LINK_TYPES, link_shape

META_TABLE = "EvigraphMeta"

EXTRACTION_SOURCE = "extraction"
"""`_source` of entities and relations written by ingestion; only these are garbage-collected."""

EXTRACTION_CACHE = "ExtractionCache"
"""LLM extraction results by passage content hash (`GraphStore.cached_extractions`)."""

ENTITY_REDIRECT = "EntityRedirect"
"""Entity ids merged away at finalize -> their survivor (`GraphStore.merge_entities`)."""

VERSION_SEQ = "EvigraphVersionSeq"
"""Per document key, the highest version number handed out (`n`), on both stores (on FalkorDB a
writer takes its number in a query of its own, so two writers of one key never share one). It
outlives the document: a key deleted and ingested again numbers on from it, so a version number,
and with it a passage id (`version_rows.chunk_id`), never names two texts, and evidence read
before the delete cannot pass for the new text. A key without a row (written before the row was
kept) numbers on from its current version, and a delete first raises the row to the version it
removes."""

TRACE_TASK, TRACE_EVENT, TRACE_STEP, TRACE_REQUEST = "TraceTask", "TraceEvent", "TraceStep", "TraceRequest"
"""An agent's tasks, events and steps, and the saved results of its requests (`store/traces.py`).
Keyed by project inside the id, so no look-up reaches another project's rows."""

STEP_SUPPORTS = "supports"
"""The step column holding its supports as JSON (`NewStep.supports`): read and written only with
their step, so kept in its row; a decision's have rows of their own, which review finds."""

TRACE_DECISION, TRACE_SUPPORT, TRACE_REVIEW = "TraceDecision", "TraceSupport", "TraceReview"
"""Decisions, the supports they rest on (every one ever given, `current` or replaced), and the
queue of flagged decisions whose dependents are still to be flagged (`store/embedded/decisions.py`)."""

TRACE_TABLES = frozenset(
    {TRACE_TASK, TRACE_EVENT, TRACE_STEP, TRACE_REQUEST, TRACE_DECISION, TRACE_SUPPORT, TRACE_REVIEW}
)

TRACE_LOOKUPS: tuple[tuple[str, str], ...] = (
    (TRACE_TASK, "id"),
    (TRACE_TASK, "project"),
    (TRACE_EVENT, "id"),
    (TRACE_EVENT, "task"),
    (TRACE_STEP, "id"),
    (TRACE_STEP, "task"),
    (TRACE_REQUEST, "id"),
    (TRACE_DECISION, "id"),
    (TRACE_DECISION, "project"),
    (TRACE_SUPPORT, "id"),
    (TRACE_SUPPORT, "decision"),
    (TRACE_SUPPORT, "document"),
    (TRACE_SUPPORT, "ref"),
    (TRACE_REVIEW, "id"),
    (TRACE_REVIEW, "project"),
)
"""(label, property) the shared trace and decision queries find rows by (`trace_reads`,
`trace_writes`, `decision_writes`): what a backend that indexes properties indexes for them."""

CODE_NODE_TABLES = frozenset(CODE_LABELS)
CODE_REL_TABLES = frozenset(LINK_TYPES)

CONTEXT_COLUMN = "passage_context"
"""A chunk's context (`TextChunk.context`): searched and embedded, hidden from Cypher like a vector,
as an agent quoting it would quote words the document does not hold."""

FOUND_COLUMN = "found_hits"
"""The names extraction found in a chunk before typing (`ingest/extraction/found_hits.py`), which
finalize types again: internal, hidden from Cypher."""

CYPHER_NODE_LABELS = frozenset({"Document", "Chunk", "Entity"} | CODE_NODE_TABLES)
CYPHER_REL_TYPES = frozenset({"PART_OF", "NEXT", "MENTIONED_IN", "RELATES"} | CODE_REL_TABLES)
CYPHER_TABLES = CYPHER_NODE_LABELS | CYPHER_REL_TYPES
"""What free-form Cypher may read: the knowledge graph, and nothing else. An allow-list, so a table a
later release adds (bookkeeping, agents' records) is unreadable until someone decides otherwise. The
tables outside it hold no relationship to the graph's (checked by tests on both stores), so a pattern
that starts from these labels can never walk into them."""

CODE_PROPERTIES: dict[str, str] = {
    "Repo": "id, name, root",
    "Module": "id, repo, path, name (dotted, e.g. 'pkg.sub.mod'), language, docstring, line_start, line_end, "
    "imports (dotted targets as written)",
    "Class": "id, repo, path, module, name, qualname, signature, docstring, line_start, line_end, bases",
    "Function": "as Class's, with calls (callee names as written, resolved or not) instead of bases",
}
"""What the Cypher guide says of each code table's properties (the tables list every column by type)."""


def _code_guide() -> str:
    nodes = ", ".join(f"(:{label} {{{CODE_PROPERTIES[label]}}})" for label in CODE_LABELS)
    edges = ", ".join(link_shape(kind) for kind in LINK_TYPES)
    examples = "; ".join(query for _, query in CODE_QUERIES)
    return (
        "Code (from ingest_code; structure only, never bodies: read path from line_start to line_end for a body): "
        f"{nodes}; a method's qualname is 'Class.method'. Edges: {edges}; MENTIONS joins a passage to a symbol "
        f"it names. Examples: {examples}. "
    )


CYPHER_GUIDE = (
    "Entities are (:Entity) nodes with id, name, label, description; filter a type with e.label = 'Person'. "
    "Relations are [:RELATES] edges with type, fact, confidence, source_chunks (the ids of the passages "
    "stating it, separated by spaces: string_split(r.source_chunks, ' ')); filter with r.type = 'X'. "
    "Passages are (:Chunk) nodes (id, document, index, text) linked (:Chunk)-[:PART_OF]->(:Document) and "
    "(:Entity)-[:MENTIONED_IN]->(:Chunk). Example: MATCH (a:Entity)-[r:RELATES]->(b:Entity) "
    "WHERE a.name = 'Ada Lovelace' RETURN r.type, b.name, r.fact LIMIT 20. "
    + _code_guide()
    + "Bounds: name a label on every node you match (only these tables are readable); at most 10 levels of "
    "nesting, 10 relationship patterns and 2,000 tokens; variable-length patterns need an upper bound of "
    "at most 10 hops (e.g. *1..3)."
)
"""What an agent needs to write Cypher for this schema; shown with the table list (get_ontology)."""


def trace_key(*parts: str | int) -> str:
    """The id of an agent's trace row (task, event, step, decision, ...): its project and own parts,
    so no look-up by id reaches another project's rows."""
    return json.dumps(parts, ensure_ascii=False)
