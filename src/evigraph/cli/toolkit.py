"""`evigraph mcp` and `evigraph serve`: the agent toolkit served, set up from flags and environment.

Both take the toolkit's options with the same flags (`cli_parser._toolkit_options`), read by one
function, so a flag cannot mean one thing to one server and another to the other. Settings that
contradict each other, or a network without a token, are said in one line with the fix, exit
code 2, before anything is opened.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

TOOLKIT_FLAGS = ("db", "read_only", "allow_writes", "files_root", "host", "port", "engine", "project", "agent")


def toolkit_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The shared flags as `McpConfig.from_env` takes them."""
    return {name: getattr(args, name) for name in TOOLKIT_FLAGS}


async def mcp(args: argparse.Namespace) -> int:
    from evigraph.mcp.main import McpConfig, serve

    async def start() -> None:
        await serve(McpConfig.from_env(**toolkit_flags(args), transport=args.transport))

    return await _serving(args, start)


async def serve(args: argparse.Namespace) -> int:
    from evigraph.api.config import ServeConfig
    from evigraph.api.main import serve as run

    async def start() -> None:
        extra = {
            "db_dir": args.db_dir,
            "token": args.token,
            "cors_origins": args.cors_origin,
            "max_open": args.max_open,
        }
        await run(ServeConfig.from_flags(**toolkit_flags(args), **extra, with_mcp=args.with_mcp))

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
