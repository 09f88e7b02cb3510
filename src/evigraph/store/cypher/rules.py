"""The policy every store's Cypher guard applies: refused keywords, hidden names, hints.

Kept apart from the code that applies it, so a reviewer reads the whole shared policy in one place;
each backend's dialect (its functions and procedures) lives in its own rules. Names are compared
case-insensitively, as the engines do.
"""

from __future__ import annotations

from evigraph.store.core.schema_names import CONTEXT_COLUMN, FOUND_COLUMN

FORBIDDEN_KEYWORDS = {
    **dict.fromkeys(("CREATE", "MERGE", "SET", "DELETE", "REMOVE", "UPDATE"), "writes"),
    "DETACH": "deletes or detaches databases",
    **dict.fromkeys(("DROP", "ALTER", "RENAME", "ADD", "COMMENT", "MACRO", "SEQUENCE"), "changes the schema"),
    **dict.fromkeys(("INCREMENT", "MINVALUE", "MAXVALUE", "CYCLE", "START"), "changes the schema"),
    "COPY": "reads or writes files",
    "LOAD": "reads files or loads extensions",
    "HEADERS": "reads files",
    "EXPORT": "writes files",
    "IMPORT": "reads files",
    **dict.fromkeys(("INSTALL", "UNINSTALL", "EXTENSION", "FORCE"), "installs or loads extensions"),
    **dict.fromkeys(("ATTACH", "USE", "DATABASE", "DBTYPE"), "opens other databases"),
    **dict.fromkeys(("BEGIN", "COMMIT", "ROLLBACK", "TRANSACTION"), "controls transactions"),
    **dict.fromkeys(("COMMIT_SKIP_CHECKPOINT", "ROLLBACK_SKIP_CHECKPOINT"), "controls transactions"),
    "CHECKPOINT": "writes",
    "PROJECT": "creates projected graphs",
    "FOREACH": "writes",
    **dict.fromkeys(("EXPLAIN", "PROFILE"), "is added by the store itself"),
}
"""Every keyword of the Kuzu grammar (src/antlr4/keywords.txt, Kuzu 0.11) that starts or is part of
a statement other than a read query, and FalkorDB's FOREACH. Refused wherever they stand as a word,
except as a property name after `.`; the engines accept some as variable names, which costs little
to lose."""

STARTS = frozenset({"MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN", "CALL"})

NOT_FUNCTIONS = frozenset(
    {
        *("MATCH", "OPTIONAL", "WHERE", "WITH", "UNWIND", "RETURN", "CALL", "YIELD", "UNION", "AS"),
        *("AND", "OR", "NOT", "XOR", "IN", "IS", "CASE", "WHEN", "THEN", "ELSE", "END", "DISTINCT"),
        *("BY", "SKIP", "LIMIT", "CONTAINS", "STARTS", "ENDS", "CAST", "ALL", "ANY", "NONE", "SINGLE"),
        *("EXISTS", "COUNT", "HINT", "JOIN", "MULTI_JOIN", "SHORTEST", "WSHORTEST", "TRAIL", "ACYCLIC"),
    }
)
"""Unquoted keywords that may stand before `(` without being a function call (`WHERE (a OR b)`,
`CAST(x AS INT64)`, `ALL(x IN xs WHERE ...)`). A backtick-quoted name before `(` is always a
function to the engines, so it is checked against the dialect's functions."""

HIDDEN_PROPERTIES = frozenset(
    {
        "embedding",
        "search_text",
        "sentence_starts",
        "sentence_ends",
        "sentence_vectors",
        CONTEXT_COLUMN,
        FOUND_COLUMN,
        "live",
    }
)
"""Vectors, full-text index text, graph ranking's sentence offsets, the contexts a contextual chunker
wrote (words the document does not hold, so never to be quoted) and FalkorDB's `live` flag are
internal: named anywhere (as a property, a quoted name or a string), the query is refused; whole
nodes come back without them, a computed key cannot reach them (each dialect's guard), and
get_ontology does not list them."""

HINT = "free-form Cypher only reads: one MATCH ... RETURN statement (call get_ontology for labels and properties)"

LABEL_HINT = (
    "name a label of the knowledge graph on every node you match, e.g. MATCH (e:Entity), (c:Chunk) or "
    "(d:Document) (get_ontology lists them); tasks and decisions are read with their tools"
)

RANGE_MAX_ITEMS = 1000
"""`range()` takes integer literals spanning at most this many items: the embedded engine builds
ranges at about 1.5 µs and 300 bytes per item without checking its time limit (range(1, 10_000_000)
ran 32 s to 7 GB) and copies the list into every row of a 2,048-row batch; FalkorDB built
`range(1, 50000000)` (790 MB) with no memory cap."""
