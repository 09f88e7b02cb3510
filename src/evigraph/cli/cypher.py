"""`evigraph cypher` (also `cypher_query`, the tool's name): read-only Cypher from the command line.

The README's Cypher examples needed a running server to try; this runs them on the file, with
the tool's guard and bounds (read-only statements, a time limit, at most `limit` rows), or asks
the evigraph process holding the file, as `search` does. Its options come from the tool's input
model, so the command line cannot allow what the tool refuses.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from evigraph.cli.options import Verbs, bounded_int

if TYPE_CHECKING:
    from evigraph.retrieval.schema import CypherRows

HINT = 'e.g. evigraph cypher "MATCH (e:Entity) WHERE e.name = \\$name RETURN e.label" --params \'{"name": "Ada"}\''


def add_parsers(verbs: Verbs) -> None:
    parser = verbs.add("cypher", run=cypher, aliases=["cypher_query"])
    if not verbs.wanted("cypher"):  # the options come from the tool's pydantic input model
        return
    from evigraph.tools.inputs import CypherInput

    fields = CypherInput.model_fields
    parser.add_argument("query", help=fields["query"].description)
    parser.add_argument("--params", default=None, metavar="JSON", help="query parameters as a JSON object ($name)")
    bounded_int(parser, fields["limit"], "--limit")


async def cypher(args: argparse.Namespace) -> int:
    """read-only Cypher on the knowledge base (what the cypher_query tool runs)

    Run one read-only Cypher query and print its rows as tab-separated columns (--json: the columns, rows and
    whether they were cut at --limit). Writes are refused; a query that runs too long is stopped. `evigraph status`
    and the get_ontology tool list the tables and properties to query."""
    from evigraph.cli.common import field_bounds, note
    from evigraph.cli.serving import holder_note, open_for_reads
    from evigraph.errors import ConfigurationError
    from evigraph.strict import build
    from evigraph.tools.inputs import CypherInput

    try:
        params = json.loads(args.params) if args.params is not None else {}
    except ValueError as exc:
        raise ConfigurationError(f"--params is not JSON: {exc}", hint=HINT) from None
    if not isinstance(params, dict):
        raise ConfigurationError(f"--params must be a JSON object, not {type(params).__name__}", hint=HINT)
    names = {"query": "QUERY", "params": "--params", "limit": "--limit"}
    values = {"query": args.query, "params": params, "limit": args.limit}
    given = build(CypherInput, values, hint=HINT, names=names, what="cypher options")
    async with open_for_reads(args.db, engine=args.engine) as reads:
        note(holder_note(reads))
        found = await reads.cypher_query(given.query, given.params, limit=given.limit)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        print_rows(found)
    if found.truncated:
        most = field_bounds(CypherInput.model_fields["limit"])[1]
        print(f"(cut at {given.limit} rows: raise --limit, up to {most}, or narrow the query)", file=sys.stderr)
    return 0


def print_rows(found: CypherRows) -> None:
    """Tab-separated, a header line first: `cut`, `sort` and spreadsheets read it as it is."""
    print("\t".join(found.columns))
    for row in found.rows:
        print("\t".join(_cell(row.get(column)) for column in found.columns))


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("\t", " ").replace("\n", " ")
