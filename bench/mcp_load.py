"""The MCP server under load: concurrent HTTP clients making `retrieve` calls on loopback.

Builds a knowledge base from DATA/corpus.jsonl with the rule extractor (or reuses --db), starts
`evigraph mcp --transport http` on a free loopback port, then runs --clients MCP SDK clients at
once, each with its own HTTP connection pool and its own MCP session, each making --calls
`retrieve` calls with questions from DATA/questions.jsonl. Reports throughput (calls per second
over the whole run), p50/p95 latency per call and the error count (must be 0), and as a same-run
baseline the same retrieve calls made in process through `Toolkit.call` by a single client.
Prints a table, writes DIR/mcp_load.json and DIR/mcp_load.png (latency histogram).

    python bench/mcp_load.py --data ../shared/bench/musique --out bench/out
    python bench/mcp_load.py --data ../shared/bench/musique --out bench/out --clients 2 --calls 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import mcp_server, peak_rss_mb, pyplot, require_dataset
from retrieval import percentile_ms, read_jsonl

START_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 300.0


@dataclass
class Load:
    """What the clients measured: one latency per successful call, and the failures."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def plan_questions(questions: list[str], clients: int, calls: int) -> list[list[str]]:
    """Client i's questions: the list walked round-robin, so clients ask different things at once."""
    return [[questions[(i * calls + j) % len(questions)] for j in range(calls)] for i in range(clients)]


async def build(data: Path, db: Path, extractor: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    info: dict[str, Any] = {}
    if db.exists():
        info["db"] = "reused"
        return info
    async with KnowledgeBase(db, extractor=extractor) as kb:
        t0 = time.perf_counter()
        report = await kb.ingest([data / "corpus.jsonl"], progress=False)
        info["ingest_seconds"] = round(time.perf_counter() - t0, 1)
        if not report.ok:
            raise SystemExit(f"ingest failed: {report.failed[:3]}")
    return info


async def in_process(db: Path, plan: list[list[str]]) -> Load:
    """The same retrieve calls through `Toolkit.call`, one client, one call at a time."""
    from evigraph import KnowledgeBase, Toolkit
    from evigraph.providers.embedders import embedder_from_env

    load = Load()
    async with KnowledgeBase(db, read_only=True, embedder=embedder_from_env()) as kb:
        toolkit = Toolkit(kb, read_only=True)
        await toolkit.call("retrieve", {"question": plan[0][0]})  # warm caches, untimed
        t_start = time.perf_counter()
        for questions in plan:
            session = toolkit.new_session()  # one session per simulated client, as the server keeps
            for question in questions:
                t0 = time.perf_counter()
                try:
                    await session.call("retrieve", {"question": question})
                except Exception as exc:
                    load.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                load.latencies.append(time.perf_counter() - t0)
        load.seconds = time.perf_counter() - t_start
    return load


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), to see which side the load is bound by."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_peak_rss_mb(pid: int) -> float | None:
    """Peak resident set of the server process (Linux /proc), read while it still runs."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


async def over_mcp(url: str, plan: list[list[str]]) -> Load:
    """Every client connects first; then all make their calls at once, each call timed alone."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    load = Load()
    connected = 0
    all_connected = asyncio.Event()
    go = asyncio.Event()
    done: list[float] = []

    async def client(questions: list[str]) -> None:
        arrived = False

        def arrive() -> None:
            nonlocal connected, arrived
            if not arrived:
                arrived, connected = True, connected + 1
                if connected == len(plan):
                    all_connected.set()

        left = len(questions)
        try:
            async with (
                httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http,
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT_S) as mcp,
            ):
                arrive()
                await go.wait()
                for question in questions:
                    left -= 1
                    t0 = time.perf_counter()
                    try:
                        result = await mcp.call_tool("retrieve", {"question": question})
                    except Exception as exc:
                        load.errors.append(f"{type(exc).__name__}: {exc}")
                        continue
                    elapsed = time.perf_counter() - t0
                    if result.is_error:
                        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                        load.errors.append(f"tool error: {text[:200]}")
                    else:
                        load.latencies.append(elapsed)
        except Exception as exc:  # the connection failed: every call it had left counts as an error
            load.errors += [f"client failed: {type(exc).__name__}: {exc}"] * max(left, 1)
        finally:
            arrive()
            done.append(time.perf_counter())

    async def run_clients() -> None:
        # One untimed call first, as the in-process baseline makes: the server's caches warm up.
        async with (
            httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http,
            Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT_S) as mcp,
        ):
            await mcp.call_tool("retrieve", {"question": plan[0][0]})
        async with asyncio.TaskGroup() as group:
            for questions in plan:
                group.create_task(client(questions))
            await asyncio.wait_for(all_connected.wait(), timeout=START_TIMEOUT_S)
            start = time.perf_counter()
            go.set()
        load.seconds = max(done) - start if done else 0.0

    await run_clients()
    return load


def summary(load: Load, clients: int) -> dict[str, Any]:
    calls = len(load.latencies)
    return {
        "clients": clients,
        "calls": calls + len(load.errors),
        "errors": len(load.errors),
        "calls_per_s": round(calls / load.seconds, 1) if load.seconds else None,
        "p50_ms": round(percentile_ms(load.latencies, 50), 2) if calls else None,
        "p95_ms": round(percentile_ms(load.latencies, 95), 2) if calls else None,
        "seconds": round(load.seconds, 2),
    }


def plot(mcp: Load, baseline: Load, results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None or not mcp.latencies:
        return
    import numpy as np

    every = [x * 1000 for x in mcp.latencies + baseline.latencies]
    low, high = max(min(every), 0.1), max(every)
    bins = np.logspace(np.log10(low), np.log10(high * 1.01), 40)
    fig, ax = plt.subplots(figsize=(9, 5))
    info = results["info"]
    ax.hist(
        [x * 1000 for x in mcp.latencies],
        bins=bins,
        alpha=0.7,
        label=f"MCP over HTTP, {info['clients']} clients at once",
    )
    ax.hist([x * 1000 for x in baseline.latencies], bins=bins, alpha=0.7, label="in process (Toolkit.call), 1 client")
    for name, color in (("mcp_http", "C0"), ("in_process", "C1")):
        for q, style in (("p50_ms", "-"), ("p95_ms", ":")):
            value = results[name][q]
            if value:
                ax.axvline(value, color=color, linestyle=style, linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("ms per retrieve call (solid: p50, dotted: p95)")
    ax.set_ylabel("calls")
    ax.set_title(f"retrieve latency, {info['dataset']}, {info['clients']} x {info['calls_per_client']} calls")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


async def run(args: argparse.Namespace, db: Path, log: Path) -> tuple[dict[str, Any], Load, Load]:
    questions = [q["question"] for q in read_jsonl(args.data / "questions.jsonl")]
    if not questions:
        raise SystemExit(f"no questions in {args.data / 'questions.jsonl'}")
    plan = plan_questions(questions, args.clients, args.calls)
    info: dict[str, Any] = {
        "dataset": args.data.name,
        "clients": args.clients,
        "calls_per_client": args.calls,
        "distinct_questions": len({q for qs in plan for q in qs}),
        **await build(args.data, db, args.extractor),
    }
    baseline = await in_process(db, plan)  # before the server starts: it holds the database
    with mcp_server(db, log) as (url, proc):
        server_cpu, client_cpu = cpu_seconds(proc.pid), time.process_time()
        mcp = await over_mcp(url, plan)
        server_after = cpu_seconds(proc.pid)
        info["server_peak_rss_mb"] = server_peak_rss_mb(proc.pid)
    # CPU seconds each side spent during the load (connecting and the warm-up call included): a
    # side whose CPU time is close to the run's wall time is the one the throughput is bound by.
    info["server_cpu_s"] = round(server_after - server_cpu, 1) if server_cpu is not None and server_after else None
    info["client_cpu_s"] = round(time.process_time() - client_cpu, 1)
    results = {
        "info": info,
        "mcp_http": summary(mcp, args.clients),
        "in_process": summary(baseline, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "error_samples": mcp.errors[:5],
    }
    ratio = results["mcp_http"]["p50_ms"], results["in_process"]["p50_ms"]
    results["p50_x_in_process"] = round(ratio[0] / ratio[1], 1) if all(ratio) else None
    return results, mcp, baseline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench/musique"), help="dataset folder")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--db", type=Path, help="reuse (or create) this knowledge base instead of a temporary one")
    parser.add_argument("--clients", type=int, default=20, help="concurrent MCP clients (default 20)")
    parser.add_argument("--calls", type=int, default=50, help="retrieve calls per client (default 50)")
    parser.add_argument("--extractor", default="rules", help="extractor for the ingest (default: rules)")
    args = parser.parse_args()
    if args.clients < 1 or args.calls < 1:
        parser.error("--clients and --calls must be at least 1")
    require_dataset(args.data, args.db)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evigraph-mcp-load-") as tmp:
        db = (args.db or Path(tmp) / "bench.db").resolve()
        results, mcp, baseline = asyncio.run(run(args, db, Path(tmp) / "server.log"))
    (args.out / "mcp_load.json").write_text(json.dumps(results, indent=2))
    plot(mcp, baseline, results, args.out / "mcp_load.png")

    info = results["info"]
    print(f"dataset {info['dataset']}: {json.dumps(info)}; bench peak RSS {results['peak_rss_mb']:.0f} MB")
    print(f"{'':<38} {'calls':>6} {'errors':>7} {'calls/s':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for label, key in (
        (f"MCP streamable HTTP, {args.clients} clients", "mcp_http"),
        ("in process Toolkit.call, 1 client", "in_process"),
    ):
        r = results[key]
        print(
            f"{label:<38} {r['calls']:>6} {r['errors']:>7} {r['calls_per_s'] or '-':>8} "
            f"{r['p50_ms'] or '-':>8} {r['p95_ms'] or '-':>8}"
        )
    print(f"p50 over MCP is {results['p50_x_in_process']}x the in-process p50")
    if mcp.errors:
        print(f"{len(mcp.errors)} errors, e.g. {mcp.errors[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
