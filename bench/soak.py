"""Memory of a long-lived MCP server: thousands of `retrieve` calls, the server's RSS sampled.

Builds a knowledge base from DATA/corpus.jsonl with the rule extractor (or reuses --db), starts
ONE `evigraph mcp --transport http --read-only` server on a free loopback port, and drives
--calls `retrieve` calls through the MCP SDK client: --clients clients at once, each opening a
new MCP session every --session-calls calls, questions from DATA/questions.jsonl round-robin.
The server's RSS (psutil on its PID) is sampled every --sample-every calls. Reported: RSS once
warmed up (after --warmup calls) and at the end, the growth in MB and in KB per call (end minus
warm-up, and a least-squares slope), the peak, errors (must be 0), latency.

The same run, on a second server, measures the baseline: the engine's leaking shape (a fresh
prepare per parameterised query), restored by the executor's internal switch
EVIGRAPH_STATEMENT_CACHE=0 (src/evigraph/store/embedded/executor.py). The bar (issue 9): growth
after warm-up under 50 MB over 5,000 calls. Writes DIR/soak.json and DIR/soak.png (RSS over calls).

    python bench/soak.py --out bench/out
    python bench/soak.py --calls 600 --warmup 100 --baseline-calls 600 --passages 200   # quick look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import mcp_server, pyplot, require_dataset
from retrieval import percentile_ms, read_jsonl

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "hotpotqa"
CALL_TIMEOUT_S = 300.0
BAR_MB = 50.0
CACHE_SWITCH = "EVIGRAPH_STATEMENT_CACHE"  # executor.STATEMENT_CACHE_ENV; not imported: the server reads it
VARIANTS = {
    "fixed": ("prepared once per connection, connections renewed", "1"),
    "baseline": ("prepared on every call (EVIGRAPH_STATEMENT_CACHE=0)", "0"),
}


@dataclass
class Soak:
    """One server's run: RSS samples (calls done, MB), per-call latencies and failures."""

    samples: list[tuple[int, float]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    peak_mb: float | None = None


async def build(data: Path, db: Path, passages: int, extractor: str) -> dict[str, Any]:
    from evigraph.kb import KnowledgeBase

    if db.exists():
        return {"db": "reused"}
    records = read_jsonl(data / "corpus.jsonl", passages or None)
    source = db.with_name("soak-corpus.jsonl")
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    async with KnowledgeBase(db, extractor=extractor) as kb:
        t0 = time.perf_counter()
        report = await kb.ingest([source], progress=False)
        if not report.ok:
            raise SystemExit(f"ingest failed: {report.failed[:3]}")
    return {"db": "built", "passages": len(records), "ingest_seconds": round(time.perf_counter() - t0, 1)}


def rss_mb(pid: int) -> float:
    import psutil  # type: ignore[import-untyped]

    return float(psutil.Process(pid).memory_info().rss) / 2**20


def peak_mb(pid: int) -> float | None:
    """The server's peak resident set (Linux VmHWM), read while it still runs."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


async def soak(url: str, pid: int, questions: list[str], args: argparse.Namespace, calls: int) -> Soak:
    """`calls` retrieve calls from --clients clients at once; RSS sampled every --sample-every calls."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    run = Soak(samples=[(0, rss_mb(pid))])
    done = 0

    def finished_one() -> None:
        nonlocal done
        done += 1
        if done % args.sample_every == 0 or done == calls:
            run.samples.append((done, rss_mb(pid)))

    async def client(first: int, count: int) -> None:
        asked = 0
        while asked < count:
            session = min(args.session_calls, count - asked)
            try:
                async with (
                    httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http,
                    Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT_S) as mcp,
                ):
                    for _ in range(session):
                        question = questions[(first + asked) % len(questions)]
                        asked += 1
                        t0 = time.perf_counter()
                        try:
                            result = await mcp.call_tool("retrieve", {"question": question})
                        except Exception as exc:
                            run.errors.append(f"{type(exc).__name__}: {exc}")
                        else:
                            if result.is_error:
                                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                                run.errors.append(f"tool error: {text[:200]}")
                            else:
                                run.latencies.append(time.perf_counter() - t0)
                        finished_one()
            except Exception as exc:  # the session failed: what it had left counts as errors
                left = count - asked
                run.errors += [f"session failed: {type(exc).__name__}: {exc}"] * max(left, 1)
                for _ in range(left):
                    finished_one()
                asked = count

    share, extra = divmod(calls, args.clients)
    t0 = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        first = 0
        for i in range(args.clients):
            count = share + (1 if i < extra else 0)
            group.create_task(client(first, count))
            first += count
    run.seconds = time.perf_counter() - t0
    run.peak_mb = peak_mb(pid)
    return run


def summary(run: Soak, warmup: int) -> dict[str, Any]:
    """RSS after warm-up vs the end; KB per call both as end-minus-warm-up and as a fitted slope."""
    import numpy as np

    after = [(n, mb) for n, mb in run.samples if n >= warmup]
    warm_n, warm_mb = after[0] if after else run.samples[-1]
    end_n, end_mb = run.samples[-1]
    growth = end_mb - warm_mb
    slope = None
    if len(after) >= 3:
        xs, ys = np.array([n for n, _ in after], float), np.array([mb for _, mb in after], float)
        slope = round(float(np.polyfit(xs, ys, 1)[0]) * 1024, 2)
    calls = len(run.latencies) + len(run.errors)
    return {
        "calls": calls,
        "errors": len(run.errors),
        "first_errors": run.errors[:3],
        "rss_start_mb": round(run.samples[0][1], 1),
        "rss_warm_mb": round(warm_mb, 1),
        "warm_at_call": warm_n,
        "rss_end_mb": round(end_mb, 1),
        "growth_mb": round(growth, 1),
        "kb_per_call": round(growth * 1024 / (end_n - warm_n), 2) if end_n > warm_n else None,
        "slope_kb_per_call": slope,
        "peak_mb": run.peak_mb,
        "calls_per_s": round(len(run.latencies) / run.seconds, 1) if run.seconds else None,
        "p50_ms": round(percentile_ms(run.latencies, 50), 1) if run.latencies else None,
        "p95_ms": round(percentile_ms(run.latencies, 95), 1) if run.latencies else None,
        "under_bar": growth < BAR_MB,
        "samples": [[n, round(mb, 2)] for n, mb in run.samples],
    }


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, res in results["variants"].items():
        xs, ys = zip(*res["samples"], strict=True)
        label = f"{name}: {VARIANTS[name][0]} ({res['growth_mb']:+.0f} MB after warm-up)"
        ax.plot(xs, ys, label=label)
    ax.axvline(results["info"]["warmup"], color="grey", linestyle=":", linewidth=1, label="end of warm-up")
    ax.set_xlabel("retrieve calls through one MCP server")
    ax.set_ylabel("server RSS (MB)")
    info = results["info"]
    ax.set_title(f"evigraph mcp RSS, {info['dataset']}, {info['clients']} clients, {info['calls']} calls")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def table(results: dict[str, Any]) -> str:
    head = ("variant", "calls", "errors", "warm MB", "end MB", "growth MB", "KB/call", "slope KB/call", "p50 ms")
    rows = [head]
    for name, r in results["variants"].items():
        rows.append(
            (
                name,
                str(r["calls"]),
                str(r["errors"]),
                f"{r['rss_warm_mb']:.1f}",
                f"{r['rss_end_mb']:.1f}",
                f"{r['growth_mb']:+.1f}",
                str(r["kb_per_call"]),
                str(r["slope_kb_per_call"]),
                str(r["p50_ms"]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows)


async def main_async(args: argparse.Namespace, db: Path, logs: Path) -> dict[str, Any]:
    questions = [q["question"] for q in read_jsonl(args.data / "questions.jsonl")]
    if not questions:
        raise SystemExit(f"no questions in {args.data / 'questions.jsonl'}")
    info: dict[str, Any] = {
        "dataset": args.data.name,
        "calls": args.calls,
        "baseline_calls": args.baseline_calls,
        "warmup": args.warmup,
        "clients": args.clients,
        "session_calls": args.session_calls,
        "distinct_questions": len(questions),
        "bar_mb": BAR_MB,
        **await build(args.data, db, args.passages, args.extractor),
    }
    results: dict[str, Any] = {"info": info, "variants": {}}
    for name, (_, cache) in VARIANTS.items():
        calls = args.calls if name == "fixed" else args.baseline_calls
        if calls <= 0:
            continue
        with mcp_server(db, logs / f"{name}.log", extra_args=["--read-only"], env_extra={CACHE_SWITCH: cache}) as (
            url,
            proc,
        ):
            run = await soak(url, proc.pid, questions, args, calls)
        results["variants"][name] = summary(run, args.warmup)
        print(f"{name}: {results['variants'][name]['growth_mb']:+.1f} MB after warm-up", file=sys.stderr, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with corpus.jsonl, questions.jsonl")
    parser.add_argument("--db", type=Path, help="reuse this knowledge base (built here if it does not exist)")
    parser.add_argument("--passages", type=int, default=0, help="ingest only the first N records (0: all)")
    parser.add_argument("--extractor", default="rules")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--baseline-calls", type=int, default=5000, help="0 skips the baseline server")
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--session-calls", type=int, default=625, help="calls per MCP session before reconnecting")
    parser.add_argument("--sample-every", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    require_dataset(args.data, args.db)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evigraph-soak-") as tmp:
        db = args.db or Path(tmp) / "soak.db"
        results = asyncio.run(main_async(args, db, Path(tmp)))
    print(table(results))
    fixed = results["variants"].get("fixed")
    if fixed:
        verdict = "met" if fixed["growth_mb"] < BAR_MB else "NOT met"
        growth = fixed["growth_mb"]
        print(f"bar: RSS growth after warm-up under {BAR_MB:.0f} MB over 5,000 calls: {verdict} ({growth:+.1f} MB)")
    (args.out / "soak.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    plot(results, args.out / "soak.png")
    print(f"wrote {args.out / 'soak.json'} and {args.out / 'soak.png'}")


if __name__ == "__main__":
    main()
