"""An adversarial corpus for cypher_query: dangerous payloads, each under every hiding trick.

Payloads name paths inside a sandbox (`Paths`), so any file they manage to read or write is
seen by the side-effect checks of test_cypher_adversarial. A case is (name, query, params,
must_refuse): `must_refuse` holds for a bare payload, which must never run; a trick that turns
the payload into a string or a comment may legitimately return rows, as long as nothing happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECRET = "canary-7f3a9e1d-never-returned"
PASSWD_MARK = "root:x:0:0"


@dataclass(frozen=True)
class Paths:
    canary_csv: Path  # holds SECRET
    extension: Path  # a shared library whose constructor would write `loaded_marker`
    loaded_marker: Path
    targets: Path  # where write payloads aim


@dataclass(frozen=True)
class Case:
    name: str
    query: str
    params: dict[str, Any] = field(default_factory=dict)
    must_refuse: bool = False


def payloads(p: Paths) -> dict[str, str]:
    """Statements that read files, write files or the database, load code, or crash the engine."""
    csv, t = p.canary_csv.as_posix(), p.targets.as_posix()
    return {
        "load_canary": f"LOAD FROM '{csv}' (header=true) RETURN *",
        "load_passwd": 'LOAD FROM "/etc/passwd" (file_format="csv", header=false, delim=":") RETURN *',
        "load_headers": f"LOAD WITH HEADERS (name STRING, secret STRING) FROM '{csv}' RETURN *",
        "load_in_match": f"MATCH (e:Entity) WITH e LOAD FROM '{csv}' (header=true) RETURN *",
        "copy_to": f"COPY (MATCH (c:Chunk) RETURN c.text) TO '{t}/out.csv'",
        "copy_from": f"COPY Entity FROM '{csv}'",
        "export": f"EXPORT DATABASE '{t}/exported'",
        "import": f"IMPORT DATABASE '{t}'",
        "load_ext_path": f"LOAD EXTENSION '{p.extension.as_posix()}'",
        "load_ext_name": "LOAD EXTENSION json",
        "install": "INSTALL json",
        "force_install": "FORCE INSTALL json",
        "uninstall": "UNINSTALL fts",
        "attach": f"ATTACH '{t}/other.db' AS other (dbtype kuzu)",
        "detach_db": "DETACH DATABASE other",
        "use": "USE other",
        "create": "CREATE (:Entity {id: 'evil', name: 'evil'})",
        "merge": "MERGE (e:Entity {id: 'evil'}) RETURN e",
        "set": "MATCH (e:Entity) SET e.name = 'evil'",
        "delete": "MATCH (d:Document) DETACH DELETE d",
        "remove": "MATCH (e:Entity) REMOVE e.description",
        "drop": "DROP TABLE Theme",
        "alter": "ALTER TABLE Entity ADD evil INT64",
        "create_table": "CREATE NODE TABLE Evil(id STRING PRIMARY KEY)",
        "macro": "CREATE MACRO evil(x) AS x + 1",
        "sequence": "CREATE SEQUENCE evil",
        "comment_on": "COMMENT ON TABLE Entity IS 'evil'",
        "checkpoint": "CHECKPOINT",
        "begin": "BEGIN TRANSACTION",
        "commit": "COMMIT",
        "rollback": "ROLLBACK",
        "call_config": "CALL threads=1",
        "current_setting": "CALL current_setting('threads') RETURN *",
        "current_setting_bt": "CALL `current_setting`('threads') RETURN *",
        "show_functions": "CALL show_functions() RETURN *",
        "show_functions_bt": "CALL `SHOW_FUNCTIONS`() RETURN *",
        "show_attached": "CALL show_attached_databases() RETURN *",
        "stats_info": "CALL stats_info('Entity') RETURN *",
        "storage_info": "CALL storage_info('Entity') RETURN *",
        "file_info": "CALL file_info() RETURN *",
        "show_warnings": "CALL show_warnings() RETURN *",
        "clear_warnings": "CALL clear_warnings()",
        "project_graph": "CALL project_graph('g', ['Entity'], ['RELATES'])",
        "page_rank": "CALL page_rank('g') RETURN *",
        "create_fts": "CALL create_fts_index('Chunk', 'evil', ['text'])",
        "drop_fts": "CALL drop_fts_index('Module', 'module_text_fts')",
        "create_vector": "CALL create_vector_index('Chunk', 'evil', 'embedding')",
        "profile": "PROFILE MATCH (n) RETURN n",
        "explain": "EXPLAIN MATCH (n) RETURN n",
        "huge_range": "RETURN range(1, 1000000)",
        "huge_unwind": "UNWIND range(1, 5000000) AS x RETURN x",
        "repeat": "RETURN repeat('a', 100000000)",
        "to_string_node": "MATCH (c:Chunk) RETURN to_string(c)",
        "cast_node": "MATCH (c:Chunk) RETURN CAST(c AS STRING)",
        "embedding": "MATCH (c:Chunk) RETURN c.embedding",
        "folded_key": "MATCH (c:Chunk) RETURN struct_extract(c, 'embed' + 'ding')",
        "star": "MATCH (c:Chunk) RETURN c.*",
    }


def _first_word(payload: str) -> str:
    return payload.split()[0]


def _swap_first(payload: str, new: str) -> str:
    return new + payload[len(_first_word(payload)) :]


_HOMOGLYPHS = str.maketrans({"A": "\u0410", "C": "\u0421", "E": "\u0415", "O": "\u041e", "T": "\u0422"})

TRICKS: dict[str, Callable[[str], str]] = {
    "bare": lambda s: s,
    "semicolon": lambda s: s + ";",
    "lower": lambda s: s.lower(),
    "after_return": lambda s: "RETURN 1; " + s,
    "after_commit": lambda s: "MATCH (n) RETURN n LIMIT 1; COMMIT; " + s + ";",
    "issue_exploit": lambda s: "// '\n" + s + " // '\nLIMIT 3",
    "quote_in_block": lambda s: "/* ' */ " + s + " /* ' */",
    "comment_then_code": lambda s: "MATCH (n) RETURN n /* x */ ; " + s,
    "escaped_quote": lambda s: "RETURN '\\'' AS q; " + s,
    "escaped_dquote": lambda s: 'RETURN "\\"" AS q; ' + s,
    "nested_quotes": lambda s: "RETURN \"'\" AS a, '\"' AS b; " + s,
    "line_comment_semicolon": lambda s: "RETURN 1 AS x // ;\n; " + s,
    "lone_cr": lambda s: "RETURN 1 AS x // note\r" + s,
    "line_separator": lambda s: "RETURN 1 AS x;\u2028" + s,
    "backtick_keyword": lambda s: _swap_first(s, f"`{_first_word(s)}`"),
    "fullwidth": lambda s: _swap_first(s, "".join(chr(ord(c) + 0xFEE0) for c in _first_word(s))),
    "homoglyph": lambda s: _swap_first(s, _first_word(s).upper().translate(_HOMOGLYPHS)),
    "zero_width": lambda s: _swap_first(s, _first_word(s)[:1] + "\u200b" + _first_word(s)[1:]),
    "u_escape": lambda s: _swap_first(s, "\\u00" + format(ord(_first_word(s)[0]), "02x") + _first_word(s)[1:]),
    "with_prefix": lambda s: "WITH 1 AS x " + s,
    "unwind_prefix": lambda s: "UNWIND [1] AS x " + s,
    "in_string": lambda s: "RETURN '" + s.replace("\\", "\\\\").replace("'", "\\'") + "' AS text",
}


def corpus(p: Paths) -> list[Case]:
    """Every payload under every trick, plus hand-written cases the combinations do not reach."""
    cases = [
        Case(f"{trick}:{name}", fn(payload), must_refuse=trick in ("bare", "semicolon", "lower"))
        for name, payload in payloads(p).items()
        for trick, fn in TRICKS.items()
    ]
    csv = p.canary_csv.as_posix()
    cases += [
        Case("issue:exact", f"// '\nLOAD FROM \"{csv}\" (header=true) RETURN * // '\nLIMIT 3", must_refuse=True),
        Case("mixed_list_param", "MATCH (e:Entity) WHERE e.id IN $ids RETURN e.name", {"ids": [1, "a"]}, True),
        Case("empty_list_param", "MATCH (e:Entity) WHERE e.id IN $ids RETURN e.name", {"ids": []}, True),
        Case("surrogate_param", "MATCH (e:Entity) WHERE e.name = $n RETURN e", {"n": "\ud800"}, True),
        Case("hidden_param", "MATCH (c:Chunk) RETURN struct_extract(c, $k)", {"k": "embedding"}, True),
        Case("unterminated_string", "MATCH (n) RETURN 'open", must_refuse=True),
        Case("unterminated_comment", "MATCH (n) RETURN n /* open", must_refuse=True),
        Case("unterminated_backtick", "MATCH (`open) RETURN 1", must_refuse=True),
        Case("semicolon_in_backtick", "MATCH (n:`a;b`) RETURN n; CREATE (:Entity {id: 'x'})", must_refuse=True),
        Case("limit_expression", "MATCH (n) RETURN n LIMIT 1; DROP TABLE Theme", must_refuse=True),
        Case("union_write", "MATCH (n) RETURN n.id AS x UNION CREATE (m:Entity {id: 'x'}) RETURN m.id AS x", {}, True),
        Case("exists_write", "MATCH (n) WHERE EXISTS { MATCH (n) SET n.name = 'x' } RETURN n", must_refuse=True),
        Case("count_subquery_load", f"RETURN COUNT {{ LOAD FROM '{csv}' RETURN * }} AS n", must_refuse=True),
        Case("quantifier_range", "RETURN all(x IN range(1, 100000000) WHERE x > 0)", must_refuse=True),
        # issue 31: what crashed, stalled or swelled a server, and what read past the knowledge graph
        Case("nested_calls_800", "RETURN " + "lower(" * 800 + "'x'" + ")" * 800 + " AS x", must_refuse=True),
        Case("nested_lists_300", "RETURN " + "[" * 300 + "1" + "]" * 300 + " AS x", must_refuse=True),
        Case("nested_case_20", "RETURN " + "CASE WHEN true THEN " * 20 + "1" + " END" * 20, must_refuse=True),
        Case("string_doubled", "WITH 'x' AS s " + "WITH s + s AS s " * 26 + "RETURN size(s)", must_refuse=True),
        Case("list_doubled", "WITH [1] AS l " + "WITH list_concat(l, l) AS l " * 17 + "RETURN l", must_refuse=True),
        Case("whole_node_print", "MATCH (c:Chunk) RETURN list_to_string(',', [c]) AS x", must_refuse=True),
        Case("computed_table_name", "CALL table_info('Trace' + 'Decision') RETURN *", must_refuse=True),
        Case("computed_key", "MATCH (c:Chunk) RETURN struct_extract(c, 'embed' + 'ding') AS x", must_refuse=True),
        Case("bookkeeping", "MATCH (s:SourceLog) RETURN s", must_refuse=True),
        Case("unbounded_hops", "MATCH (a:Entity)-[:RELATES*]->(b:Entity) RETURN b", must_refuse=True),
        Case("read_control", "MATCH (e:Entity) RETURN e.name AS name ORDER BY name LIMIT 5"),
        Case("param_control", "MATCH (e:Entity) WHERE e.label = $l RETURN e.name", {"l": "Person"}),
        Case("procedure_control", "CALL show_tables() RETURN name"),
        Case("indexes_control", "CALL show_indexes() RETURN *"),
        Case("write_words_in_strings", "MATCH (c:Chunk) WHERE c.text CONTAINS 'CREATE; DROP' RETURN c.id"),
    ]
    return cases


FRAGMENTS = [
    *("MATCH (n)", "RETURN n", "RETURN 1", "WITH 1 AS x", "UNWIND [1] AS x", "CALL", "show_tables()", "LIMIT 1"),
    *(";", "//", "/*", "*/", "'", '"', "`", "\\", "\\'", "\n", "\r", "\u2028", "\u200b", "$x", "(", ")", "{", "}"),
    *("COMMIT", "BEGIN TRANSACTION", "LOAD FROM '/etc/passwd' RETURN *", "LOAD EXTENSION json", "COPY", "TO"),
    *("EXPORT DATABASE 'x'", "ATTACH", "CREATE (:Entity {id: 'x'})", "DETACH DELETE n", "SET n.name = 'x'"),
    *("DROP TABLE Theme", "current_setting('threads')", "`current_setting`", "show_functions()", "range(1, 9999999)"),
    *("ＣＲＥＡＴＥ", "\u0421REATE", "\\u0043REATE", "c.embedding", "CAST(n AS STRING)", "UNION", "EXISTS {", "}"),
    *("list_to_string(',', [n])", "n['embed' + 'ding']", "CASE WHEN true THEN", "END", "NOT", "-", "s + s AS s"),
]
"""Pieces the property test glues together at random."""
