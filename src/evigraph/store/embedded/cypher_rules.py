"""What free-form Cypher may name: keywords, functions, procedures, internal properties.

Everything here is an allow-list or a list of what is refused by name, kept apart from the code
that applies it so a reviewer can read the whole policy in one place. Names are compared
case-insensitively, as the engine does.
"""

from __future__ import annotations

from evigraph.store.embedded.schema import CONTEXT_COLUMN, TRACE_TABLES

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
    **dict.fromkeys(("EXPLAIN", "PROFILE"), "is added by the store itself"),
}
"""Every keyword of the engine's grammar (src/antlr4/keywords.txt, Kuzu 0.11) that starts or is
part of a statement other than a read query. Refused wherever they stand as a word, except as a
property name after `.`; the engine accepts some as variable names, which costs little to lose."""

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
function to the engine, so it is checked against FUNCTIONS."""

FUNCTIONS = frozenset(
    {
        *("count", "sum", "avg", "min", "max", "collect"),
        *("abs", "ceil", "ceiling", "floor", "round", "sqrt", "cbrt", "sign", "ln", "log", "log2", "log10"),
        *("pow", "pi", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "cot", "degrees", "radians"),
        *("negate", "even", "factorial", "gamma", "lgamma"),
        *("lower", "upper", "lcase", "ucase", "trim", "ltrim", "rtrim", "size", "substring", "substr"),
        *("left", "right", "starts_with", "ends_with", "contains", "prefix", "suffix", "concat", "reverse"),
        *("initcap", "regexp_matches", "regexp_replace", "regexp_extract", "regexp_extract_all"),
        *("regexp_split_to_array", "string_split", "split_part"),
        *("list_extract", "list_element", "array_extract", "list_slice", "array_slice", "list_contains"),
        *("list_has", "list_has_all", "list_position", "list_indexof", "list_sort", "list_reverse_sort"),
        *("list_distinct", "list_unique", "list_concat", "list_cat", "array_concat", "array_cat"),
        *("list_append", "array_append", "list_prepend", "array_prepend", "list_sum", "list_product"),
        *("list_any_value", "list_to_string", "list_reverse", "range"),
        *("coalesce", "ifnull", "nullif", "typeof", "struct_extract", "map_extract", "element_at"),
        *("cardinality", "map_keys", "map_values"),
        *("id", "label", "labels", "offset", "nodes", "rels", "properties", "is_trail", "is_acyclic", "length"),
        *("date", "timestamp", "interval", "current_date", "current_timestamp", "date_part", "datepart"),
        *("date_trunc", "datetrunc", "dayname", "monthname", "last_day", "greatest", "least", "make_date"),
        *("epoch_ms", "to_epoch_ms", "century", "to_timestamp", "to_date"),
        *("to_int64", "to_int32", "to_double", "to_float", "to_bool"),
    }
)
"""Read-only scalar and aggregate functions that exist in Kuzu 0.11 (each checked with EXPLAIN).
Left out on purpose: functions whose output grows with an argument (`repeat`, `lpad`, `rpad`,
lambdas such as `list_transform`), `levenshtein` (quadratic in the text), and `to_string` /
`string`, which print a whole node with its vector and index text."""

FUNCTION_HINT = (
    "allowed functions include count, collect, sum, avg, min, max, lower, upper, trim, size, substring, "
    "starts_with, contains, concat, regexp_matches, string_split, list_contains, list_sort, coalesce, id, "
    "label, nodes, rels, properties, struct_extract, date, timestamp, range (literal bounds)"
)

KEY_FUNCTIONS = frozenset({"struct_extract", "properties"})
"""Functions that pick a property by name; the name must be one string literal, since the engine
folds `'embed' + 'ding'` into a key before anyone could check it."""

RANGE_MAX_ITEMS = 1000
"""`range()` takes integer literals spanning at most this many items: the engine builds ranges at
about 1.5 µs and 300 bytes per item without checking its time limit (range(1, 10_000_000) ran
32 s to 7 GB), and copies the list into every row of a 2,048-row batch."""

CAST_TARGETS = frozenset(
    {
        *("INT8", "INT16", "INT32", "INT64", "INT128", "UINT8", "UINT16", "UINT32", "UINT64", "INT"),
        *("INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL"),
        *("BOOL", "BOOLEAN", "DATE", "TIMESTAMP", "INTERVAL"),
    }
)
"""Types CAST may produce: casting a node to STRING would print its vector and index text."""

PROCEDURES = frozenset({"show_tables", "table_info", "show_indexes", "show_connection", "query_fts_index"})
"""Procedures callable with CALL, by exact name. `show_functions` is left out: it crashes the
engine (segmentation fault) in Kuzu 0.11.3 and took an MCP server down."""

HIDDEN_PROPERTIES = frozenset(
    {"embedding", "search_text", "sentence_starts", "sentence_ends", "sentence_vectors", CONTEXT_COLUMN}
)
"""Vectors, full-text index text, graph ranking's sentence offsets and the contexts a contextual
chunker wrote (words the document does not hold, so never to be quoted) are internal: named anywhere
(as a property, a quoted name or a string), the query is refused; whole nodes come back without
them, and get_ontology does not list them."""

HIDDEN_TABLES = frozenset(t.casefold() for t in TRACE_TABLES)
"""Agents' task records: every project's are in these tables, and free-form Cypher has no project,
so naming one refuses the query (and `cypher_plan` refuses a scan reaching one without its name)."""

TRACE_HINT = (
    "name the label you read, e.g. MATCH (e:Entity) or (c:Chunk); tasks and decisions are read with their tools"
)

HINT = "free-form Cypher only reads: one MATCH ... RETURN statement (call get_ontology for labels and properties)"
