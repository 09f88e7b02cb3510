"""The FalkorDB graph schema: labels, the indexes every look-up needs, and the mark of a knowledge base.

The labels and properties are the embedded store's (`store/embedded/schema.py`), so an agent's
Cypher reads the same on both, but for `source_chunks`, a list here (`CYPHER_GUIDE`). FalkorDB
creates labels on first use; what
must exist up front are the indexes: without a range index a `MATCH (c:Chunk {id: $id})` scans
every chunk. Full-text indexes are the server's own (RediSearch); the vector index is created
once the embedding model's dimension is known (`vector_index`).

A passage is `live` once its document's version switch has committed (`documents.py`): readers
filter on it, so a version being written is never half visible.
"""

from __future__ import annotations

from evigraph.store.embedded.schema import (
    CODE_NODE_TABLES,
    ENTITY_REDIRECT,
    EXTRACTION_CACHE,
    META_TABLE,
    TRACE_DECISION,
    TRACE_EVENT,
    TRACE_REQUEST,
    TRACE_REVIEW,
    TRACE_STEP,
    TRACE_SUPPORT,
    TRACE_TABLES,
    TRACE_TASK,
)
from evigraph.store.embedded.schema import (
    CYPHER_GUIDE as EMBEDDED_GUIDE,
)

__all__ = ["CYPHER_GUIDE", "SCHEMA_VERSION", "TRACE_TABLES"]

SCHEMA_VERSION = "1"

CYPHER_GUIDE = EMBEDDED_GUIDE.replace(
    "(the ids of the passages stating it, separated by spaces: string_split(r.source_chunks, ' '))",
    "(a list of the ids of the passages stating it)",
)
"""The embedded guide but for `source_chunks`: lists on relationships cost FalkorDB nothing, while
the embedded engine keeps them as text (`store/embedded/packed.py`)."""
VERSION_SEQ = "EvigraphVersionSeq"
"""Per document key, the last version number handed out: two writers of one key never share one."""

RANGE_INDEXES: tuple[tuple[str, str], ...] = (
    (META_TABLE, "key"),
    ("Document", "key"),
    ("Chunk", "id"),
    ("Chunk", "document"),
    ("Entity", "id"),
    ("Entity", "name"),
    ("SourceLog", "key"),
    ("SourceLog", "state"),
    ("Theme", "id"),
    (EXTRACTION_CACHE, "key"),
    (ENTITY_REDIRECT, "id"),
    (VERSION_SEQ, "key"),
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
    ("Repo", "id"),
    ("Module", "id"),
    ("Module", "name"),
    ("Class", "id"),
    ("Function", "id"),
)
EDGE_INDEXES: tuple[tuple[str, str], ...] = (("RELATES", "id"),)

FULLTEXT = (
    ("Chunk", "search_text"),
    ("Entity", "search_text"),
    ("Module", "search_text"),
    ("Class", "search_text"),
    ("Function", "search_text"),
)

_STOPWORD_TEXT = (
    "a about above according accordingly across actually after afterwards again against all allow allows "
    "almost alone along already also although always am among amongst an and another any anybody anyhow "
    "anyone anything anyway anyways anywhere apart appear appreciate appropriate are around as aside asking "
    "associated at away awfully be became because become becomes becoming been before beforehand behind being "
    "believe below beside besides best better between beyond both brief but by can cannot cant causes certain "
    "certainly changes clearly co com concerning consequently consider considering contain containing "
    "contains corresponding could course currently definitely despite did different do does doing done down "
    "downwards during each edu eg eight either else elsewhere enough entirely especially etc even ever every "
    "everybody everyone everything everywhere exactly example except few fifth first five followed following "
    "follows for former formerly forth four from further furthermore get gets getting given go goes going "
    "gone got gotten greetings had happens hardly has have having he hello help hence her here hereafter "
    "hereby herein hereupon hers herself him himself his hopefully how howbeit however i ie if ignored "
    "immediate in inasmuch inc indeed indicate indicated indicates inner insofar instead into inward is it "
    "its itself just keep keeps kept know knows last lately later latter latterly least less lest let like "
    "liked little look looking looks ltd mainly many may maybe me mean meanwhile merely might more moreover "
    "most mostly much must my myself name namely near nearly necessary need needs neither never nevertheless "
    "new next nine no nobody non none noone nor normally not nothing novel now nowhere obviously of off often "
    "oh okay on once one ones only onto or other others otherwise ought our ours ourselves out outside over "
    "overall own particular particularly per perhaps placed please plus possible presumably probably provides "
    "quite qv rather re really reasonably regarding regardless regards relatively respectively right said "
    "same saw say saying says second secondly see seeing seem seemed seeming seems seen sensible sent serious "
    "seriously seven several shall she should since six so some somebody somehow someone something sometime "
    "sometimes somewhat somewhere soon sorry specified specify specifying still sub such sup sure take taken "
    "tell tends than thank thanks thanx that thats the their theirs them themselves then thence there "
    "thereafter thereby therefore therein theres thereupon these they think third this thorough thoroughly "
    "those though three through throughout thru thus to together too took toward towards tried tries truly "
    "trying twice two un under unfortunately unless unlikely until unto up upon us used useful using usually "
    "uucp various very via viz vs want wants was we welcome well went were what whatever when whence whenever "
    "where whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever "
    "whole whom whose why will willing wish with within without wonder would yes yet you your yours yourself "
    "yourselves"
)
QUERY_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Question words the embedded store's full-text search ignores (Kuzu's default English stopwords,
as its index answers them: every word here finds nothing there), so FalkorDB's passage search
drops the same ones. The index itself keeps them (`stopwords: []`): its word counts stay whole."""

VECTOR_EF_RUNTIME = 200
"""The HNSW search breadth. The server's default (10) found 62 % of the exact nearest passages in
a probe; vector search must match the embedded store's exact scan on the bench."""

NODE_LABELS = frozenset(
    {META_TABLE, "Document", "Chunk", "Entity", "SourceLog", "Theme", EXTRACTION_CACHE, ENTITY_REDIRECT, VERSION_SEQ}
    | TRACE_TABLES
    | CODE_NODE_TABLES
)
RELATIONSHIP_TYPES = frozenset(
    {"PART_OF", "NEXT", "MENTIONED_IN", "RELATES", "CONTAINS", "IMPORTS", "CALLS", "INHERITS", "MENTIONS"}
)
"""Every relationship type the schema defines. The server knows a type only once an edge has it,
so `schema_tables` lists these (and `NODE_LABELS`) whether or not one exists yet, as the embedded
store lists its empty tables: an agent reading the ontology before any code is ingested still
sees the code tables the Cypher guide names."""
INTERNAL_LABELS = frozenset(
    {META_TABLE, "SourceLog", "Theme", EXTRACTION_CACHE, ENTITY_REDIRECT, VERSION_SEQ} | TRACE_TABLES
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


def fulltext_statement(label: str, prop: str) -> str:
    return f"CALL db.idx.fulltext.createNodeIndex({{label: '{label}', stopwords: []}}, '{prop}')"


def vector_index(dimension: int) -> str:
    return (
        f"CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) OPTIONS {{dimension: {int(dimension)}, "
        f"similarityFunction: 'cosine', efRuntime: {VECTOR_EF_RUNTIME}}}"
    )
