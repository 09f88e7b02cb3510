"""`evigraph mcp` and `evigraph serve`: the agent toolkit served, set up from flags and environment.

Both take the toolkit's options with the same flags (`_toolkit_options`), read by one function,
so a flag cannot mean one thing to one server and another to the other. Settings that contradict
each other, or a network without a token, are said in one line with the fix, exit code 2, before
anything is opened; the checks live with the settings (`McpConfig.from_env`, `ServeConfig.from_flags`),
not here, so both verbs and a Python caller get the same ones.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from evigraph.cli.common import flag_values
from evigraph.cli.options import ENGINES, Verbs

TOOLKIT_FLAGS = ("db", "read_only", "allow_writes", "files_root", "host", "port", "engine", "project", "agent")
"""The shared flags, named as `McpConfig.from_env` takes them."""
TRANSPORTS = ("stdio", "http", "sse")
MCP_PORT, SERVE_PORT, MAX_OPEN = 8765, 8471, 4
"""`evigraph mcp`'s transports and port, `evigraph serve`'s port and open knowledge bases: the
servers' own (`mcp.main`, `api.config`, `api.catalog`), which load the serving stack, too much to
import for a parser; `tests/cli/test_cli_dispatch.py` holds them equal."""


def add_parsers(verbs: Verbs) -> None:
    parser = verbs.add("mcp", run=mcp, opens_kb=False)
    _where(parser, "with --transport http, ")
    _toolkit_options(parser, verbs.wanted("mcp"))
    parser.add_argument("--transport", default="stdio", choices=TRANSPORTS)
    parser.add_argument("--host", default="127.0.0.1", help="address for http/sse (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=MCP_PORT, help=f"port for http/sse (default {MCP_PORT})")
    _mcp_path_option(parser, "with --transport http: the path MCP is served at (default /mcp)")
    _serve_parser(verbs)


def _where(parser: argparse.ArgumentParser, condition: str = "") -> None:
    """--db, or --db-dir with --max-open: one knowledge base, or a folder of them; `condition` says
    what else --db-dir needs (`evigraph mcp`'s transport)."""
    folder_help = (
        f"{condition}serve every NAME.db file in DIR, each opened on first use; a request chooses one with the "
        "X-Evigraph-Db header (or ?db=NAME in its URL)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        default=None,
        help="knowledge base: a file, or falkordb://host:port/GRAPH (default: $EVIGRAPH_DB, else ./evigraph.db)",
    )
    where.add_argument("--db-dir", default=None, metavar="DIR", help=folder_help)
    parser.add_argument(
        "--max-open",
        type=int,
        default=None,
        metavar="N",
        help="with --db-dir: keep at most N knowledge bases open, closing the least recently used idle one "
        f"(default: $EVIGRAPH_SERVE_MAX_OPEN, else {MAX_OPEN}; each holds its page cache and indexes in memory)",
    )


def _mcp_path_option(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--mcp-path", default=None, metavar="PATH", help=text)


def _serve_parser(verbs: Verbs) -> None:
    """`evigraph serve`: the toolkit over REST, the web UI, and MCP at /mcp with --with-mcp."""
    serve_parser = verbs.add("serve", run=serve, opens_kb=False)
    _where(serve_parser)
    _toolkit_options(serve_parser, verbs.wanted("serve"))
    serve_parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve_parser.add_argument("--port", type=int, default=SERVE_PORT, help=f"port (default {SERVE_PORT})")
    serve_parser.add_argument(
        "--token",
        default=None,
        help="bearer token every /api and /mcp request must send; required off loopback (default: "
        "$EVIGRAPH_MCP_TOKEN, which keeps it out of the process list)",
    )
    serve_parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let web pages from ORIGIN (e.g. http://localhost:5173) call the API (repeatable; default: none, "
        "the web UI at / needs none)",
    )
    serve_parser.add_argument(
        "--with-mcp",
        action="store_true",
        help="also serve MCP (streamable HTTP) at /mcp on the same knowledge base (with --db-dir, on the one each "
        "request names)",
    )
    _mcp_path_option(serve_parser, "with --with-mcp: the path MCP is served at (default /mcp)")


def _toolkit_options(parser: argparse.ArgumentParser, wanted: bool) -> None:
    """What the served tools may do: the same flags for `evigraph mcp` and `evigraph serve`; the
    limit flags when the verb is `wanted` (they are generated from `Limits`, which needs pydantic)."""
    if wanted:
        _limit_options(parser)
    parser.add_argument("--engine", default="auto", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=None,
        help="serve the read tools only (the default, said explicitly)",
    )
    parser.add_argument("--allow-writes", action="store_true", default=None, help="serve the write tools too")
    parser.add_argument(
        "--files-root", default=None, help="serve the write tools, and let ingest and preview_files read this folder"
    )
    parser.add_argument("--project", default=None, help="serve the task tools for this project (with --agent)")
    parser.add_argument("--agent", default=None, help="the agent the task tools record as (with --project)")


def _limit_options(parser: argparse.ArgumentParser) -> None:
    """One flag per operator limit, named after its `Limits` field (`max_hits` -> `--max-hits`, $EVIGRAPH_MAX_HITS).

    Taken as text: `Limits.from_env` checks flags and variables alike, with one error for both."""
    from evigraph.limits import Limits, env_name, flag_name

    group = parser.add_argument_group("operator limits (flags win over the variables)")
    for name, info in Limits.model_fields.items():
        group.add_argument(
            flag_name(name),
            default=None,
            metavar="N",
            help=f"{info.description} (default: ${env_name(name)}, else {info.default:g})",
        )


def _limit_flags(args: argparse.Namespace) -> dict[str, str | None]:
    from evigraph.limits import SETTINGS

    return flag_values(args, SETTINGS)


async def mcp(args: argparse.Namespace) -> int:
    """serve the agent toolkit over MCP (stdio, streamable HTTP or SSE)

    Serve the toolkit over MCP: the read tools, and the write tools only with --allow-writes or --files-root
    (without either the database is opened read-only). Environment: EVIGRAPH_DB, EVIGRAPH_MCP_ALLOW_WRITES,
    EVIGRAPH_MCP_READ_ONLY, EVIGRAPH_MCP_FILES_ROOT, EVIGRAPH_MCP_TOKEN (required off loopback), EVIGRAPH_MCP_SCOPE,
    EVIGRAPH_MCP_PROJECT, EVIGRAPH_MCP_AGENT, EVIGRAPH_EMBEDDER, and the limits' EVIGRAPH_MAX_HITS, ...,
    EVIGRAPH_READ_DEADLINE_SECONDS; flags win over them."""
    from evigraph.mcp.main import McpConfig, serve

    async def start() -> None:
        toolkit = flag_values(args, TOOLKIT_FLAGS)
        if args.db_dir is not None:
            await _serve_folder(args, toolkit)
            return
        where = {"mcp_path": args.mcp_path, "max_open": args.max_open}
        await serve(McpConfig.from_env(**toolkit, **where, transport=args.transport, limits=_limit_flags(args)))

    return await _serving(args, start)


async def _serve_folder(args: argparse.Namespace, toolkit: dict[str, Any]) -> None:
    """`evigraph mcp --db-dir`: `evigraph serve`'s folder of knowledge bases, with MCP alone."""
    from evigraph.api.config import ServeConfig
    from evigraph.api.main import serve as run

    extra = {"db_dir": args.db_dir, "max_open": args.max_open, "limits": _limit_flags(args), "mcp_path": args.mcp_path}
    await run(ServeConfig.from_flags(**toolkit, **extra, transport=args.transport, with_mcp=True, rest=False))


async def serve(args: argparse.Namespace) -> int:
    """serve the agent toolkit over REST (and MCP with --with-mcp), with the web UI at /

    Serve every toolkit tool as POST /api/tools/NAME (GET /api/tools, /api/openapi.json, /api/health, /api/dbs), and
    the web UI at /. What the tools may do is set as for `evigraph mcp`: the read tools, and the write tools only
    with --allow-writes or --files-root; the same EVIGRAPH_MCP_* variables apply, and flags win over them. Loopback
    only unless given a token (--token or EVIGRAPH_MCP_TOKEN)."""
    from evigraph.api.config import ServeConfig
    from evigraph.api.main import serve as run

    async def start() -> None:
        extra = {
            "db_dir": args.db_dir,
            "token": args.token,
            "cors_origins": args.cors_origin,
            "max_open": args.max_open,
            "limits": _limit_flags(args),
            "mcp_path": args.mcp_path,
        }
        await run(ServeConfig.from_flags(**flag_values(args, TOOLKIT_FLAGS), **extra, with_mcp=args.with_mcp))

    return await _serving(args, start)


async def _serving(args: argparse.Namespace, start: Callable[[], Awaitable[None]]) -> int:
    from evigraph.cli.common import EXIT_OK, EXIT_USAGE, report_error
    from evigraph.errors import ConfigurationError
    from evigraph.mcp.main import configure_logging

    configure_logging()
    try:
        await start()
    except ConfigurationError as exc:  # flags that contradict each other or the database's holder
        report_error(str(exc), args)
        return EXIT_USAGE
    return EXIT_OK
