"""Kuzu's dialect of free-form Cypher: the functions, casts and procedures a query may use.

The policy every store shares (refused keywords, hidden properties, readable tables) is in
`store/cypher/rules.py`; this is the embedded engine's part of the allow-list, kept apart from the
code that applies it so a reviewer can read it in one place. Names are compared case-insensitively,
as the engine does.
"""

from __future__ import annotations

FUNCTIONS = frozenset(
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
        *("list_any_value", "list_reverse", "range"),
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
lambdas such as `list_transform`), `levenshtein` (quadratic in the text), and every function that
prints a whole node with its vector and index text: `to_string`, `string` and `list_to_string`
(`list_to_string(',', [c])` did, before it was left out)."""

FUNCTION_HINT = (
    "allowed functions include count, collect, sum, avg, min, max, lower, upper, trim, size, substring, "
    "starts_with, contains, concat, regexp_matches, string_split, list_contains, list_sort, coalesce, id, "
    "label, nodes, rels, properties, struct_extract, date, timestamp, range (literal bounds)"
)

KEY_FUNCTIONS = frozenset({"struct_extract", "properties"})
"""Functions that pick a property by name; the name must be one string literal, since the engine
folds `'embed' + 'ding'` into a key before anyone could check it."""

CAST_TARGETS = frozenset(
    {
        *("INT8", "INT16", "INT32", "INT64", "INT128", "UINT8", "UINT16", "UINT32", "UINT64", "INT"),
        *("INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL"),
        *("BOOL", "BOOLEAN", "DATE", "TIMESTAMP", "INTERVAL"),
    }
)
"""Types CAST may produce: casting a node to STRING would print its vector and index text."""

PROCEDURES = frozenset({"show_tables", "table_info", "show_indexes", "show_connection"})
"""Procedures callable with CALL, by exact name. `show_functions` is left out: it crashes the
engine (segmentation fault) in Kuzu 0.11.3 and took an MCP server down. `query_fts_index` went
with the last full-text index (a knowledge base keeps none; `search` is the full-text read)."""

PROCEDURE_TABLE_ARGUMENT = frozenset({"table_info", "show_connection"})
"""Procedures whose first argument names a table: it must be one string literal naming a table
free-form Cypher reads (`table_info('Trace' + 'Decision')` listed an agents' table's columns)."""
