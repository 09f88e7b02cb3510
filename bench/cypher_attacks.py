"""Free-form Cypher that once crashed, stalled or swelled a server, against real `evigraph serve`
processes: how fast each is answered, and what it does to `retrieve` on the same server, to the
server's memory and, on FalkorDB, to another graph on the same server.

Three servers, each ingesting the same corpus (rules extractor, no embedder): the embedded file
served read-only (Cypher in a worker process), the same served with `--allow-writes` (Cypher in
the serving process), and a FalkorDB graph on a server `evigraph server` would start (its query
memory cap and time limit), beside a second graph. For each: `retrieve` p50 alone (the baseline,
measured in the same run), then each attack sent while `retrieve` runs in a loop; the table gives
the attack's answer and time (one client sends it every 0.5 s, or on each answer when slower, for 5 s),
`retrieve`'s p50 meanwhile as a ratio of the baseline, and the peak
resident memory of the server (its worker included) and of the FalkorDB server. The MCP rows send
the two deepest queries through `/mcp` of the read-only server. Also re-measures the engines'
parse times that `store/cypher/bounds.py` is built on, at and past MAX_DEPTH.

    python bench/cypher_attacks.py --corpus ../shared/bench/hotpotqa/corpus.jsonl --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import free_port, pyplot, require_bench_files

ATTACKS = {
    "nested calls 800": "RETURN " + "lower(" * 800 + "'x'" + ")" * 800 + " AS x",
    "nested calls 10,000": "RETURN " + "lower(" * 10_000 + "'x'" + ")" * 10_000 + " AS x",
    "nested lists 300": "RETURN " + "[" * 300 + "1" + "]" * 300 + " AS x",
    "nested CASE 20": "RETURN " + "CASE WHEN true THEN " * 20 + "1" + " ELSE 0 END" * 20 + " AS x",
    "unary minus 24": "RETURN " + "-" * 24 + "1 AS x",
    "string doubled 26": "WITH 'xxxxxxxxxx' AS s " + " ".join(["WITH s + s AS s"] * 26) + " RETURN size(s) AS n",
    "list doubled 17": "WITH [1,2,3] AS l " + " ".join(["WITH list_concat(l, l) AS l"] * 17) + " RETURN size(l) AS n",
    "range 50M": "RETURN size(range(1, 50000000)) AS n",
    "allowed: 3-way product": "MATCH (a:Chunk), (b:Chunk), (c:Chunk) RETURN count(*) AS n",
    "allowed: collect of a product": (
        "MATCH (a:Chunk), (b:Chunk) WITH collect(a.text + b.text) AS l RETURN size(l) AS n"
    ),
}
MCP_ATTACKS = ("nested calls 800", "nested calls 10,000")
QUESTION = "Which country is the home of the author of the novel?"
BASELINE_CALLS = 30
WINDOW_S = 5.0
PACE_S = 0.5


def psutil_module() -> Any:
    try:
        import psutil
    except ImportError:
        raise SystemExit("this bench reads process memory with psutil: pip install -e '.[bench]'") from None
    return psutil


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (the Cypher worker), in MB."""
    psutil = psutil_module()
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / 2**20


def ingest(corpus: Path, db: str, records: int, work: Path) -> None:
    subset = work / "corpus.jsonl"
    with corpus.open(encoding="utf-8") as src, subset.open("w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i >= records:
                break
            dst.write(line)
    subprocess.run(
        [sys.executable, "-m", "evigraph", "ingest", str(subset), "--db", db, "--extractor", "rules"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def serve(db: str, log: Path, *extra: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evigraph", "serve", "--db", db, "--port", str(port), *extra],
            stdout=err,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
    import httpx

    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start within 120 s")
            time.sleep(0.2)
        yield base, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def retrieve_once(client: Any) -> float:
    t0 = time.perf_counter()
    response = client.post("/api/tools/retrieve", json={"question": QUESTION, "top_k": 5})
    response.raise_for_status()
    return time.perf_counter() - t0


def measure_server(base: str, pid: int, other: Any | None, falkor_pid: int | None) -> dict[str, Any]:
    import httpx

    out: dict[str, Any] = {}
    with httpx.Client(base_url=base, timeout=120, headers={"X-Evigraph-Session": "bench"}) as client:
        for _ in range(5):
            retrieve_once(client)
        baseline = [retrieve_once(client) for _ in range(BASELINE_CALLS)]
        out["baseline_ms"] = statistics.median(baseline) * 1000
        out["baseline_rss_mb"] = tree_rss_mb(pid)
        other_base = [other() for _ in range(10)] if other is not None else []
        out["other_graph_baseline_ms"] = statistics.median(other_base) * 1000 if other_base else None
        out["attacks"] = {}
        for name, query in ATTACKS.items():
            out["attacks"][name] = attack(client, base, pid, query, other, falkor_pid)
            print(f"  {name:32} {summary(out['attacks'][name], out)}", flush=True)
        out["alive"] = client.get("/api/health").status_code == 200
    return out


def attack(client: Any, base: str, pid: int, query: str, other: Any | None, falkor_pid: int | None) -> dict[str, Any]:
    import httpx

    result: dict[str, Any] = {}
    done = threading.Event()
    peaks = {"server": 0.0, "falkordb": 0.0}

    def send() -> None:
        """The attack, sent again every PACE_S (or as soon as it is answered, when slower) for
        WINDOW_S: one client repeating it, so a quick refusal is measured over many retrieves and a
        slow query at least once; not a flood, which any route would feel."""
        with httpx.Client(base_url=base, timeout=120, headers={"X-Evigraph-Session": "attacker"}) as mine:
            started, sent = time.perf_counter(), 0
            while sent == 0 or time.perf_counter() < started + WINDOW_S:
                t0 = time.perf_counter()
                response = mine.post("/api/tools/cypher_query", json={"query": query})
                if sent == 0:
                    result["seconds"] = time.perf_counter() - t0
                    result["status"] = response.status_code
                    body = response.json()
                    shown = body.get("error") or json.dumps(body.get("rows", []))[:80]
                    result["answer"] = shown.splitlines()[0][:110]
                sent += 1
                time.sleep(max(0.0, PACE_S - (time.perf_counter() - t0)))
            result["sent"] = sent
        done.set()

    def sample() -> None:
        while not done.is_set():
            peaks["server"] = max(peaks["server"], tree_rss_mb(pid))
            if falkor_pid is not None:
                peaks["falkordb"] = max(peaks["falkordb"], tree_rss_mb(falkor_pid))
            time.sleep(0.05)

    threads = [threading.Thread(target=send), threading.Thread(target=sample)]
    for t in threads:
        t.start()
    during: list[float] = []
    others: list[float] = []
    while not done.is_set() or len(during) < 5:
        during.append(retrieve_once(client))
        if other is not None:
            others.append(other())
    for t in threads:
        t.join()
    result["retrieve_p50_ms"] = statistics.median(during) * 1000
    result["retrieve_max_ms"] = max(during) * 1000
    result["other_graph_p50_ms"] = statistics.median(others) * 1000 if others else None
    result["server_peak_mb"] = peaks["server"]
    result["falkordb_peak_mb"] = peaks["falkordb"] or None
    return result


def summary(r: dict[str, Any], server: dict[str, Any]) -> str:
    ratio = r["retrieve_p50_ms"] / server["baseline_ms"]
    falkordb = "" if r["falkordb_peak_mb"] is None else f" | FalkorDB {r['falkordb_peak_mb']:.0f} MB"
    return (
        f"{r['status']} in {r['seconds']:.2f} s | retrieve p50 x{ratio:.2f} | server {r['server_peak_mb']:.0f} MB"
        f"{falkordb} | {r['answer']}"
    )


async def through_mcp(base: str) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {}
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(base + "/mcp", http_client=http)) as client,
    ):
        for name in MCP_ATTACKS:
            t0 = time.perf_counter()
            result = await client.call_tool("cypher_query", {"query": ATTACKS[name]})
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            out[name] = {"seconds": time.perf_counter() - t0, "refused": result.is_error, "answer": text[:100]}
        t0 = time.perf_counter()
        await client.call_tool("retrieve", {"question": QUESTION})
        out["retrieve after"] = {"seconds": time.perf_counter() - t0, "refused": False, "answer": "answered"}
    return out


def parse_times(db: Path, falkor_url: str, password: str | None) -> dict[str, Any]:
    """EXPLAIN time of nesting at MAX_DEPTH and past it, on both engines, straight to the engine."""
    import kuzu
    import redis

    from evigraph.store.cypher.bounds import MAX_DEPTH

    shapes = {
        "brackets": lambda n: "RETURN " + "(" * n + "1" + ")" * n + " AS x",
        "calls": lambda n: "RETURN " + "lower(" * n + "'x'" + ")" * n + " AS x",
        "CASE": lambda n: "RETURN " + "CASE WHEN true THEN " * n + "1" + " ELSE 0 END" * n + " AS x",
        "unary minus": lambda n: "RETURN " + "-" * n + "1 AS x",
    }
    copy = db.with_name("parse.db")
    shutil.copyfile(db, copy)
    conn = kuzu.Connection(kuzu.Database(str(copy), read_only=True))
    host, port, graph = falkor_url.removeprefix("falkordb://").replace("/", ":").split(":")
    server = redis.Redis(host=host, port=int(port), password=password, socket_timeout=60)
    out: dict[str, Any] = {}
    for name, build in shapes.items():
        for depth in (MAX_DEPTH, MAX_DEPTH + 4, MAX_DEPTH + 6):
            query = build(depth)
            row: dict[str, Any] = {}
            if name != "calls" or depth <= 100:
                t0 = time.perf_counter()
                with contextlib.suppress(RuntimeError):
                    conn.execute("EXPLAIN " + query)
                row["kuzu_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            with contextlib.suppress(redis.RedisError):
                server.execute_command("GRAPH.EXPLAIN", graph, query.replace("lower(", "toLower("))
            row["falkordb_s"] = time.perf_counter() - t0
            out[f"{name} {depth}"] = row
            print(f"  parse {name:12} depth {depth:3}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()))
    return out


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(ATTACKS)
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.27
    for i, (label, server) in enumerate(results["servers"].items()):
        ratios = [server["attacks"][n]["retrieve_p50_ms"] / server["baseline_ms"] for n in names]
        ax.bar([x + i * width for x in range(len(names))], ratios, width, label=label)
    ax.axhline(2.0, color="red", linestyle="--", linewidth=1, label="bar: 2x")
    ax.set_xticks([x + width for x in range(len(names))], names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("retrieve p50 during the attack / alone")
    ax.set_title("retrieve beside free-form Cypher attacks, per server")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/bench/hotpotqa/corpus.jsonl"))
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    require_bench_files(args.corpus)
    args.out.mkdir(parents=True, exist_ok=True)
    psutil_module()
    from evigraph.store.falkordb.server import LocalServer

    results: dict[str, Any] = {"records": args.records, "corpus": str(args.corpus), "servers": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        falkor = LocalServer(work / "falkordb", port=free_port(), host="127.0.0.1")
        status = falkor.start(persist=False)
        try:
            alpha, beta = falkor.url("alpha"), falkor.url("beta")
            embedded = work / "kb.db"
            print(f"ingesting {args.records} records into the file and two FalkorDB graphs ...", flush=True)
            ingest(args.corpus, str(embedded), args.records, work)
            ingest(args.corpus, alpha, args.records, work)
            ingest(args.corpus, beta, min(args.records, 200), work)
            writable = work / "rw.db"
            shutil.copyfile(embedded, writable)
            results["parse"] = parse_times(embedded, alpha, falkor.password())
            other = beta_query(beta, falkor.password())
            servers = {
                "embedded, read-only (worker)": (str(embedded), ()),
                "embedded, --allow-writes": (str(writable), ("--allow-writes",)),
                "FalkorDB": (alpha, ()),
            }
            for label, (db, extra) in servers.items():
                print(f"{label}:", flush=True)
                with serve(db, work / f"serve-{len(results['servers'])}.log", "--with-mcp", *extra) as (base, pid):
                    on_falkor = db.startswith("falkordb://")
                    found = measure_server(base, pid, other if on_falkor else None, status.pid if on_falkor else None)
                    if label.startswith("embedded, read-only"):
                        found["mcp"] = asyncio.run(through_mcp(base))
                        for name, row in found["mcp"].items():
                            print(f"  MCP {name:28} {row['seconds']:.2f} s, refused={row['refused']}")
                    results["servers"][label] = found
        finally:
            falkor.stop()
    (args.out / "cypher_attacks.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    plot(results, args.out / "cypher_attacks.png")
    print(f"wrote {args.out / 'cypher_attacks.json'} and {args.out / 'cypher_attacks.png'}")


def beta_query(url: str, password: str | None) -> Any:
    """A timed read on the second graph, straight to the server: does the attack hold its threads?"""
    import redis

    host, port, graph = url.removeprefix("falkordb://").replace("/", ":").split(":")
    server = redis.Redis(host=host, port=int(port), password=password, socket_timeout=120)

    def once() -> float:
        t0 = time.perf_counter()
        server.execute_command("GRAPH.RO_QUERY", graph, "MATCH (e:Entity) RETURN count(e)")
        return time.perf_counter() - t0

    return once


if __name__ == "__main__":
    main()
