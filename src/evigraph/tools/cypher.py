"""Checking agent-written Cypher before it reaches the engine.

Queries already run in a read-only transaction with a row and time limit, so the engine refuses
writes. This guard adds what a read-only transaction does not stop: several statements in one
string (a `COMMIT;` would end the read-only transaction and run the rest in auto-commit mode),
statements that read or write files (`LOAD FROM`, `COPY`, `EXPORT`), extension loading, and
procedures other than the catalogue and search ones. It fails closed: an unknown procedure is
refused rather than trusted.
"""

from __future__ import annotations

import re

from evigraph.errors import ToolError

READ_PROCEDURES = frozenset(
    {"show_tables", "table_info", "show_connection", "show_indexes", "query_fts_index", "show_functions"}
)
_FORBIDDEN = {
    "create": "writes",
    "merge": "writes",
    "set": "writes",
    "delete": "writes",
    "detach": "writes",
    "remove": "writes",
    "drop": "changes the schema",
    "alter": "changes the schema",
    "copy": "reads or writes files",
    "load": "reads files or loads extensions",
    "export": "writes files",
    "import": "reads files",
    "install": "installs extensions",
    "attach": "opens other databases",
    "use": "switches databases",
    "begin": "controls transactions",
    "commit": "controls transactions",
    "rollback": "controls transactions",
    "checkpoint": "writes",
}
_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", re.DOTALL)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL = re.compile(r"\bcall\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
# Vectors and full-text index text are internal: named as a property (plain or backticked) or as a
# string (`struct_extract(c, 'embedding')`), they are refused, since a result cannot tell them apart.
HIDDEN_PROPERTIES = frozenset({"embedding", "search_text"})
_TOKENS = re.compile(
    r"'(?P<s1>(?:[^'\\]|\\.)*)'|\"(?P<s2>(?:[^\"\\]|\\.)*)\"|`(?P<q>[^`]*)`|//[^\n]*|/\*.*?\*/"
    r"|(?P<w>[A-Za-z_][A-Za-z0-9_]*)",
    re.DOTALL,
)
HINT = "cypher_query only reads: use MATCH ... RETURN (call get_ontology for labels and properties)"


def check_read_only(query: str) -> str:
    """The query, stripped of a trailing `;`, or a ToolError saying what it may not do."""
    code = _COMMENTS.sub(" ", _STRINGS.sub("''", query)).strip()
    if code.endswith(";"):
        code = code[:-1]
        query = query.rstrip().removesuffix(";")
    if ";" in code:
        raise ToolError("cypher_query runs one statement; this query has several", hint=HINT)
    if not code.strip():
        raise ToolError("the query is empty", hint=HINT)
    # property keys (`n.set`) and map keys are not statements
    words = {m.group().lower() for m in _WORD.finditer(code) if not _is_property(code, m.start())}
    for word, reason in _FORBIDDEN.items():
        if word in words:
            raise ToolError(f"cypher_query refuses {word.upper()}: it {reason}", hint=HINT)
    hidden = _hidden_names(query)
    if hidden:
        raise ToolError(
            f"cypher_query does not return {' or '.join(hidden)}: vectors and index text are internal",
            hint="return text, name, description or other properties (get_ontology lists them); "
            "for similarity use search_passages",
        )
    for m in _CALL.finditer(code):
        if m.group(1).lower() not in READ_PROCEDURES:
            raise ToolError(
                f"cypher_query refuses CALL {m.group(1)}: only catalogue and search procedures run here",
                hint=f"allowed procedures: {', '.join(sorted(READ_PROCEDURES))}",
            )
    return query


def _hidden_names(query: str) -> list[str]:
    """Internal properties the query names, as identifiers (plain or backticked) or as strings."""
    found = set()
    for m in _TOKENS.finditer(query):
        name = m.group("s1") or m.group("s2") or m.group("q") or m.group("w") or ""
        if name.strip().lower() in HIDDEN_PROPERTIES:
            found.add(name.strip().lower())
    return sorted(found)


def _is_property(code: str, start: int) -> bool:
    before = code[:start].rstrip()
    return before.endswith(".")
