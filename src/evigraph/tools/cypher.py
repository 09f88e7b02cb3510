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
    for m in _CALL.finditer(code):
        if m.group(1).lower() not in READ_PROCEDURES:
            raise ToolError(
                f"cypher_query refuses CALL {m.group(1)}: only catalogue and search procedures run here",
                hint=f"allowed procedures: {', '.join(sorted(READ_PROCEDURES))}",
            )
    return query


def _is_property(code: str, start: int) -> bool:
    before = code[:start].rstrip()
    return before.endswith(".")
