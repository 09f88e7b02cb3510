"""Checking the engine's own plan of a query before running it: a second, independent layer.

Kuzu 0.11.3 has no setting that disables file access or extension loading (`enable_file_access`
and the like do not exist: `CALL current_setting('enable_file_access')` is an invalid option), so
nothing in the engine stops `LOAD FROM`, `COPY ... TO` or `LOAD EXTENSION` once a statement is
parsed. The token guard refuses them; this module asks the engine how it parsed the query
(`EXPLAIN`, which plans without running) and refuses any plan holding an operator outside a
read-only allow-list, or a table function outside an allow-list. A file scan shows up as a table
function (`READ_CSV_PARALLEL`), `COPY ... TO` as `COPY_TO`, an export as `EXPORT_DATABASE`, and
so on, so whatever the token guard missed, the engine itself names. Unknown operators and
functions are refused (fail closed), and so is a plan this module cannot read. Every table a scan
names must be one free-form Cypher reads (`CYPHER_TABLES`, an allow-list): a label-less pattern
scans all of them, bookkeeping and agents' records included. The plan does not name the table of a
primary-key look-up or of a variable-length walk's source, which is why the token guard checks
every label the query writes against the same allow-list.

The plan is the engine's box drawing: each operator is a box whose first line is `NAME[id]`,
followed by its parameters (`Function: SHOW_TABLES`). Box-drawing characters are refused in
queries (`store/cypher/lexer.py`), so query text printed in a box cannot fake a frame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evigraph.store.cypher.lexer import refuse
from evigraph.store.cypher.rules import HINT, LABEL_HINT
from evigraph.store.cypher.statement import readable_table

READ_OPERATORS = frozenset(
    {
        *("RESULT_COLLECTOR", "PROJECTION", "FILTER", "FLATTEN", "LIMIT", "SKIP", "MULTIPLICITY_REDUCER"),
        *("SCAN_NODE_TABLE", "SCAN_REL_TABLE", "PRIMARY_KEY_SCAN_NODE_TABLE", "HASH_JOIN_BUILD"),
        *("HASH_JOIN_PROBE", "INTERSECT_BUILD", "INTERSECT", "CROSS_PRODUCT", "SEMI_MASKER", "DUMMY_SINK"),
        *("AGGREGATE", "AGGREGATE_FINALIZE", "AGGREGATE_SCAN", "ORDER_BY", "ORDER_BY_MERGE", "ORDER_BY_SCAN"),
        *("TOP_K", "TOP_K_SCAN", "UNION_ALL_SCAN", "UNWIND", "RECURSIVE_EXTEND", "PATH_PROPERTY_PROBE"),
        *("EMPTY_RESULT", "TABLE_FUNCTION_CALL", "QUERY_PRIMARY_KEY_LOOKUP"),
    }
)
"""Physical operators of Kuzu 0.11 that only read (from PhysicalOperatorUtils::operatorTypeToString),
and LadybugDB 0.22's look-up of a node by its internal id (QUERY_PRIMARY_KEY_LOOKUP, `Table: X`).
Left out, among others: COPY_TO, EXPORT_DATABASE, IMPORT_DATABASE, INSERT, MERGE, SET_PROPERTY,
DELETE, BATCH_INSERT, PARTITIONER, INDEX_LOOKUP, CREATE_*, DROP, ALTER, ATTACH_DATABASE,
DETACH_DATABASE, USE_DATABASE, INSTALL_EXTENSION, LOAD_EXTENSION, UNINSTALL_EXTENSION,
STANDALONE_CALL, TRANSACTION, DUMMY_SIMPLE_SINK."""

READ_TABLE_FUNCTIONS = frozenset({"READ_FTABLE", "SHOW_TABLES", "TABLE_INFO", "SHOW_INDEXES", "SHOW_CONNECTION"})
"""Table functions a read query may run: the engine's scan of its own intermediate results
(`READ_FTABLE`) and the allow-listed procedures. File scans (READ_CSV_*, READ_PARQUET, READ_NPY,
READ_JSON, ...) and everything else are refused."""

_NAME = re.compile(r"^([A-Z][A-Z_ ]*)\[(\d+)\]$")
_FRAME = re.compile(r"┌[─┴┬]*┐")


@dataclass
class Operator:
    name: str
    params: list[str] = field(default_factory=list)

    @property
    def tables(self) -> list[str]:
        """The tables a scan reads: `Tables: A` and one name a line after it (a label-less pattern),
        or a look-up's `Table: A`."""
        found: list[str] = []
        for p in self.params:
            if p.startswith(("Tables:", "Table:")):
                found.append(p.split(":", 1)[1].strip())
            elif found and ":" not in p:
                found.append(p)
            elif found:
                break
        return found

    @property
    def function(self) -> str | None:
        for p in self.params:
            if p.startswith("Function:"):
                return p.removeprefix("Function:").strip()
        return None


def check_plan(plan: str) -> list[Operator]:
    """The plan's operators, or CypherRefused naming the first one a read query may not run."""
    operators = parse_plan(plan)
    if not operators:
        raise refuse("the engine's plan of this query could not be read, so it is refused", HINT)
    for op in operators:
        if op.name not in READ_OPERATORS:
            raise refuse(f"the engine plans {op.name} for this query, which is not a read", HINT)
        foreign = sorted(t for t in op.tables if not readable_table(t))
        if foreign:
            # a label-less pattern scans every table, bookkeeping and agents' records included
            shown = ", ".join(foreign[:4]) + (" ..." if len(foreign) > 4 else "")
            raise refuse(f"the query would read tables outside the knowledge graph ({shown})", LABEL_HINT)
        if op.name == "TABLE_FUNCTION_CALL" and op.function not in READ_TABLE_FUNCTIONS:
            raise refuse(
                f"the engine plans the table function {op.function or '(unnamed)'} for this query, "
                "which reads outside the graph",
                HINT,
            )
    return operators


def parse_plan(plan: str) -> list[Operator]:
    """Operators from the engine's box drawing, in drawing order."""
    lines = plan.splitlines()
    title = next((i for i, line in enumerate(lines) if "Physical Plan" in line), None)
    if title is None:
        return []
    start = next((i for i in range(title, len(lines)) if lines[i].lstrip().startswith("└")), len(lines))
    operators: list[Operator] = []
    for row, line in enumerate(lines[start + 1 :], start + 1):
        for frame in _FRAME.finditer(line):
            a, b = frame.span()
            body: list[str] = []
            for inner in lines[row + 1 :]:
                cell = inner[a:b]
                if cell.startswith("└"):
                    break
                if not (cell.startswith("│") and cell.endswith("│")):
                    raise refuse("the engine's plan of this query could not be read, so it is refused", HINT)
                text = cell[1:-1].strip()
                if text and set(text) != {"-"}:
                    body.append(text)
            else:
                raise refuse("the engine's plan of this query could not be read, so it is refused", HINT)
            match = _NAME.match(body[0]) if body else None
            if match is None:
                raise refuse("the engine's plan of this query could not be read, so it is refused", HINT)
            operators.append(Operator(match.group(1).strip().replace(" ", "_"), body[1:]))
    return operators
