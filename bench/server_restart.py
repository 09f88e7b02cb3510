"""Restart of the local FalkorDB server `evigraph server start` runs: after a kill -9, against a
clean stop and start, for a knowledge base of N passages (default 50,000); and the log replay the
rewrite policy avoids.

    python bench/server_restart.py --passages 50000 --out bench/out

1. The knowledge base: the scale corpus of N records (bench/scale.py's generator, deterministic
   from ../shared/bench), ingested with the rules extractor and no embedder (scale.py's ingest
   phase, in a child process) into a server started by `evigraph server start --dir DIR --port P`.
   The server's log says how many times it rewrote its append-only log during the ingest, and for
   how long (the policy's cost).
2. Restarts, --rounds times: --edits documents are written again with a sentence added (new
   versions of existing records, so the log has a tail to replay and the knowledge base keeps its
   size), the server is stopped (`evigraph server stop`) and started; as many edits again, then
   the server is killed (kill -9) and started. Each start is timed from launching `evigraph
   server start` until a query (`MATCH (c:Chunk) RETURN count(c)`) is answered, with the sizes of
   the log's snapshot and tail before it and the load times the server logged. The clean restart
   of the same round is the baseline ("x clean"). From the rates measured, the worst case the
   policy allows (a tail of 25% of the snapshot, or 8 MB) is estimated.
3. The replay evigraph's configuration avoids (--small records, default 1,000; 0 skips it): the
   first records ingested into a new graph (a) on a server started as evigraph started it before
   (writes logged as queries, Redis's default rewrite policy, no password), and (b) on the
   product's server; each killed (kill -9) and started again, timed the same way.
4. What logging writes as effects costs (--effects-records, default 10,000; 0 skips it): the
   records ingested into two new servers started with the product's arguments but for FalkorDB's
   EFFECTS_THRESHOLD (its default, 300 us a change: writes logged as queries; evigraph's, 0),
   --effects-rounds times each, alternating which goes first: median ingest seconds and log
   bytes, the default's the baseline.

Prints a table and writes DIR/server_restart.json and DIR/server_restart.png.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import free_port, pyplot, require_bench_files, run_child
from _latency import ratio
from scale import DATASETS, generate, write_corpus

GRAPH = "kb"
SCALE = Path(__file__).resolve().parent / "scale.py"
_LOADED = re.compile(r"DB loaded from (base|incr) file \S+: ([\d.]+) seconds")
_STAMP = re.compile(r"^\d+:[A-Z] (\d+ \w+ \d+ [\d:.]+) ")


# -- the server, as a user runs it ---------------------------------------------------------------


def cli(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    return subprocess.run(
        [sys.executable, "-m", "evigraph", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def log_files(folder: Path) -> dict[str, int]:
    """Bytes of the append-only log's snapshot part (base) and replayed part (tail)."""
    parts = list((folder / "appendonlydir").glob("*"))
    return {
        "base_bytes": sum(p.stat().st_size for p in parts if ".base." in p.name),
        "tail_bytes": sum(p.stat().st_size for p in parts if ".incr." in p.name),
    }


def first_answer(port: int, password: str | None, deadline: float) -> int:
    """The passages the server holds, asked until it answers (it does once its data is read back)."""
    import redis

    client = redis.Redis(port=port, password=password, socket_timeout=30)
    while True:
        try:
            return int(client.execute_command("GRAPH.RO_QUERY", GRAPH, "MATCH (c:Chunk) RETURN count(c)")[1][0][0])
        except (redis.BusyLoadingError, redis.ConnectionError, redis.TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def loaded(log: Path, offset: int) -> dict[str, float]:
    """The load times the server logged since `offset`: its snapshot part and its replayed tail."""
    text = log.read_bytes()[offset:].decode(errors="replace")
    out = {"base_load_s": 0.0, "tail_load_s": 0.0}
    for part, seconds in _LOADED.findall(text):
        out[f"{part.replace('incr', 'tail')}_load_s"] += float(seconds)
    return out


def kill9(folder: Path, port: int) -> None:
    """SIGKILL the server the folder's pidfile names, and wait until its port is free."""
    from evigraph.store.falkordb.local_servers import pid_alive

    pid = int(json.loads((folder / "server.pid").read_text())["pid"])
    os.kill(pid, signal.SIGKILL)
    while pid_alive(pid):
        time.sleep(0.02)
    port_free(port)


def port_free(port: int) -> None:
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            return
        time.sleep(0.05)


def timed_start(folder: Path, port: int, how: str) -> dict[str, Any]:
    """`evigraph server start` until the first answered query, with what it read back."""
    before = {**log_files(folder), "how": how}
    log = folder / "falkordb.log"
    offset = log.stat().st_size
    t0 = time.perf_counter()
    done = cli("server", "start", "--dir", str(folder), "--port", str(port))
    returned = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"evigraph server start failed: {done.stderr[-2000:]}")
    password = (folder / "password").read_text().strip()
    passages = first_answer(port, password, time.monotonic() + 3600)
    answered = time.perf_counter() - t0
    progress = [line for line in done.stderr.splitlines() if "reading its data back" in line]
    return {
        **before,
        "start_returned_s": returned,
        "first_answer_s": answered,
        "passages": passages,
        "progress_lines": len(progress),
        "last_progress": progress[-1] if progress else None,
        **loaded(log, offset),
    }


def rewrites(log: Path, offset: int = 0) -> dict[str, float]:
    """Log rewrites the server ran since `offset`, and the seconds from each start to its end."""
    count, seconds, started = 0, 0.0, None
    for line in log.read_bytes()[offset:].decode(errors="replace").splitlines():
        stamp = _STAMP.match(line)
        if stamp is None:
            continue
        at = datetime.strptime(stamp[1], "%d %b %Y %H:%M:%S.%f")
        if "Background append only file rewriting started" in line:
            started = at
        elif "Background AOF rewrite finished successfully" in line and started is not None:
            count, seconds, started = count + 1, seconds + (at - started).total_seconds(), None
    return {"rewrites": count, "rewrite_seconds": seconds}


def ingest(corpus: Path, url: str) -> dict[str, Any]:
    got = run_child([str(SCALE), "--phase", "ingest", "--corpus", str(corpus), "--db", url])
    if not got.ok:
        raise SystemExit(f"ingest failed:\n{got.error}")
    return got.data


def edits(data: Path, n: int, count: int, r: int, path: Path) -> Path:
    """New versions of the last `count` of the first `n` records: each with one sentence added."""
    rows = list(generate(data, n))[-count:]
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps({**row, "text": f"{row['text']} Edited in round {r}."}, ensure_ascii=False) + "\n")
    return path


# -- part 3: a server as evigraph started it before --------------------------------------------


@contextmanager
def raw_server(folder: Path, args: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """redis-server run with `args` from `folder`, no password (its stdin, read as configuration, empty)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "log").open("ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder)
    try:
        first_answer_ping(int(args[args.index("--port") + 1]))
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=600)


def args_as_before(folder: Path, port: int) -> list[str]:
    """How the earlier `evigraph server start` ran the server: writes logged as queries, Redis's
    default rewrite policy, no query limits."""
    from evigraph.store.falkordb.server_config import RDB_SAVE, binaries

    server, module = binaries()
    args = [str(server), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--loadmodule", str(module)]
    return [*args, "--daemonize", "no", "--appendonly", "yes", "--appendfsync", "everysec", "--save", RDB_SAVE]


def args_with_effects(folder: Path, port: int, threshold: str) -> list[str]:
    """The product's arguments, with FalkorDB's EFFECTS_THRESHOLD set to `threshold`."""
    from evigraph.store.falkordb.server_config import ServerLimits, binaries, server_args

    server, module = binaries()
    args = server_args(server, module, host="127.0.0.1", port=port, folder=folder, persist=True, limits=ServerLimits())
    args[args.index("EFFECTS_THRESHOLD") + 1] = threshold
    return args


def small_replay(corpus: Path, work: Path) -> dict[str, Any]:
    """Part 3: the same records in a new graph, on a server as before and on the product's, killed and started."""
    out: dict[str, Any] = {}
    before, port = work / "before", free_port()
    with raw_server(before, args_as_before(before, port)) as proc:
        out["ingest_before"] = ingest(corpus, f"falkordb://127.0.0.1:{port}/{GRAPH}")
        time.sleep(1.5)  # the log is written to disk every second
        proc.kill()
        proc.wait()
    port_free(port)
    sizes = log_files(before)
    t0 = time.perf_counter()
    with raw_server(before, args_as_before(before, port)):
        passages = first_answer(port, None, time.monotonic() + 3600)
        out["before"] = {**sizes, "first_answer_s": time.perf_counter() - t0, "passages": passages}
    after, port = work / "after", free_port()
    if cli("server", "start", "--dir", str(after), "--port", str(port)).returncode != 0:
        raise SystemExit("evigraph server start failed")
    out["ingest_after"] = ingest(corpus, f"falkordb://127.0.0.1:{port}/{GRAPH}")
    time.sleep(1.5)
    kill9(after, port)
    out["after"] = timed_start(after, port, "kill -9")
    cli("server", "stop", "--dir", str(after))
    return out


def effects_cost(corpus: Path, work: Path, rounds: int) -> dict[str, Any]:
    """Part 4: ingest seconds and log bytes with writes logged as queries (300) and as effects (0),
    `rounds` times each, alternating which goes first; medians compared."""
    out: dict[str, Any] = {"300": {"ingest_s": []}, "0": {"ingest_s": []}}
    for r in range(rounds):
        for threshold in ("300", "0") if r % 2 == 0 else ("0", "300"):
            folder, port = work / f"effects-{threshold}-{r}", free_port()
            with raw_server(folder, args_with_effects(folder, port, threshold)):
                t0 = time.perf_counter()
                got = ingest(corpus, f"falkordb://127.0.0.1:{port}/{GRAPH}")
                out[threshold]["ingest_s"].append(time.perf_counter() - t0)
            out[threshold].update(passages=got["passages"], **log_files(folder), **rewrites(folder / "log"))
            shutil.rmtree(folder, ignore_errors=True)
            print(
                f"effects threshold {threshold}: ingest {out[threshold]['ingest_s'][-1]:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    for threshold in ("300", "0"):
        out[threshold]["median_ingest_s"] = statistics.median(out[threshold]["ingest_s"])
    out["ingest_x"] = ratio(out["0"]["median_ingest_s"], out["300"]["median_ingest_s"])
    return out


def first_answer_ping(port: int) -> None:
    """Wait until a server without a password answers (it does once its data is read back)."""
    import redis

    deadline = time.monotonic() + 3600
    while True:
        try:
            redis.Redis(port=port, socket_timeout=30).ping()
            return
        except (redis.ConnectionError, redis.TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# -- the run -----------------------------------------------------------------------------------


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from evigraph.store.falkordb.server_config import AOF_POLICY, QUERY_MEMORY_MB, QUERY_TIMEOUT_S

    report: dict[str, Any] = {
        "passages_asked": args.passages,
        "edits": args.edits,
        "policy": " ".join(AOF_POLICY),
        "limits": {"query_memory_mb": QUERY_MEMORY_MB, "query_timeout_s": QUERY_TIMEOUT_S},
    }
    corpus = work / "corpus.jsonl"
    report["records"] = write_corpus(args.data, args.passages, corpus)
    folder, port = work / "server", free_port()
    started = cli("server", "start", "--dir", str(folder), "--port", str(port))
    if started.returncode != 0:
        raise SystemExit(f"evigraph server start failed: {started.stderr}")
    url = f"falkordb://127.0.0.1:{port}/{GRAPH}"
    t0 = time.perf_counter()
    report["ingest"] = ingest(corpus, url)
    report["ingest"]["wall_s"] = time.perf_counter() - t0
    report["ingest"].update(rewrites(folder / "falkordb.log"))
    print(
        f"ingested {report['ingest']['passages']} passages in {report['ingest']['wall_s']:.0f} s, "
        f"{report['ingest']['rewrites']} log rewrites ({report['ingest']['rewrite_seconds']:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    rounds = []
    for r in range(1, args.rounds + 1):
        ingest(edits(args.data, args.passages, args.edits, 2 * r - 1, work / "edits.jsonl"), url)
        time.sleep(1.5)  # the log is written to disk every second
        if cli("server", "stop", "--dir", str(folder)).returncode != 0:
            raise SystemExit("evigraph server stop failed")
        clean = timed_start(folder, port, "clean stop/start")
        ingest(edits(args.data, args.passages, args.edits, 2 * r, work / "edits.jsonl"), url)
        time.sleep(1.5)
        kill9(folder, port)
        killed = timed_start(folder, port, "kill -9")
        killed["x_clean"] = ratio(killed["first_answer_s"], clean["first_answer_s"])
        rounds += [clean, killed]
        print(
            f"round {r}: clean {clean['first_answer_s']:.1f} s, kill -9 {killed['first_answer_s']:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    report["restarts"] = rounds
    report["worst_case"] = worst_case(rounds)
    cli("server", "stop", "--dir", str(folder))
    if args.small:
        small = work / "small.jsonl"
        write_corpus(args.data, args.small, small)
        report["small"] = small_replay(small, work)
        report["small"]["records"] = args.small
        report["small"]["x_after"] = ratio(
            report["small"]["before"]["first_answer_s"], report["small"]["after"]["first_answer_s"]
        )
    if args.effects_records:
        records = work / "effects.jsonl"
        write_corpus(args.data, args.effects_records, records)
        report["effects"] = {"records": args.effects_records, **effects_cost(records, work, args.effects_rounds)}
    return report


def worst_case(rounds: list[dict[str, Any]]) -> dict[str, float | None]:
    """The longest start the policy allows: the snapshot read at its rate, then a tail of
    max(AOF_REWRITE_MIN_MB, AOF_REWRITE_PERCENT of the snapshot) replayed at the slowest tail
    rate measured here."""
    from evigraph.store.falkordb.server_config import AOF_REWRITE_MIN_MB, AOF_REWRITE_PERCENT

    base = max(r["base_bytes"] for r in rounds)
    base_rate = min((r["base_bytes"] / r["base_load_s"] for r in rounds if r["base_load_s"] > 0), default=None)
    tail_rate = min(
        (r["tail_bytes"] / r["tail_load_s"] for r in rounds if r["tail_load_s"] > 0 and r["tail_bytes"] > 1 << 20),
        default=None,
    )
    tail = max(AOF_REWRITE_MIN_MB << 20, base * AOF_REWRITE_PERCENT // 100)
    if base_rate is None or tail_rate is None:
        return {"tail_bytes": tail, "seconds": None}
    return {
        "snapshot_mb_per_s": base_rate / 1e6,
        "tail_mb_per_s": tail_rate / 1e6,
        "tail_bytes": tail,
        "load_seconds": base / base_rate + tail / tail_rate,
    }


def print_table(report: dict[str, Any]) -> None:
    i = report["ingest"]
    print(f"knowledge base: {i['passages']} passages ({report['records']} records), rules extractor, no embedder")
    print(
        f"log policy: {report['policy']}; ingest {i['wall_s']:.0f} s with {i['rewrites']} log rewrites "
        f"taking {i['rewrite_seconds']:.1f} s in the background"
    )
    print(
        f"{'restart':<18} {'snap MB':>8} {'tail MB':>8} {'snap s':>7} {'tail s':>7} {'start s':>8} "
        f"{'answer s':>9} {'x clean':>8} {'progress':>8}"
    )
    for r in report["restarts"]:
        x = f"{r['x_clean']:>8.2f}" if r.get("x_clean") else f"{'1.00':>8}"
        print(
            f"{r['how']:<18} {r['base_bytes'] / 1e6:>8.1f} {r['tail_bytes'] / 1e6:>8.1f} {r['base_load_s']:>7.2f} "
            f"{r['tail_load_s']:>7.2f} {r['start_returned_s']:>8.2f} {r['first_answer_s']:>9.2f} {x} "
            f"{r['progress_lines']:>8}"
        )
    w = report["worst_case"]
    if w.get("load_seconds") is not None:
        print(
            f"worst case the policy allows: a {w['tail_bytes'] / 1e6:.0f} MB tail; snapshot at "
            f"{w['snapshot_mb_per_s']:.1f} MB/s, tail at {w['tail_mb_per_s']:.1f} MB/s: "
            f"{w['load_seconds']:.1f} s of loading"
        )
    s = report.get("small")
    if s:
        print(f"new graph of {s['records']} records, killed -9, first answer after the start:")
        for name, label in (("before", "as before (Redis defaults)"), ("after", "evigraph server start")):
            r = s[name]
            print(
                f"  {label:<28} snapshot {r['base_bytes'] / 1e6:6.2f} MB, tail {r['tail_bytes'] / 1e6:6.2f} MB: "
                f"{r['first_answer_s']:7.2f} s"
            )
        print(f"  before / after: {s['x_after']:.1f}x")
    e = report.get("effects")
    if e:
        print(f"writes logged as queries (FalkorDB's default) or as effects (evigraph's), {e['records']} records:")
        for threshold, label in (("300", "queries (baseline)"), ("0", "effects")):
            r = e[threshold]
            times = ", ".join(f"{t:.1f}" for t in r["ingest_s"])
            print(
                f"  {label:<20} ingest {r['median_ingest_s']:6.1f} s median ({times}); the last one's log: "
                f"{r['base_bytes'] / 1e6:.1f} MB snapshot + {r['tail_bytes'] / 1e6:.1f} MB tail, "
                f"{r['rewrites']} rewrites"
            )
        print(f"  ingest, effects / queries (medians): {e['ingest_x']:.2f}x")


def plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    labels, values, colours = [], [], []
    for n, r in enumerate(report["restarts"]):
        labels.append(f"{r['how']} (round {n // 2 + 1})")
        values.append(r["first_answer_s"])
        colours.append("#3b7dd8" if r["how"].startswith("clean") else "#d8643b")
    s = report.get("small")
    if s:
        for name, colour in (("before", "#999999"), ("after", "#3bb273")):
            labels.append(f"new graph, {s['records']} records: {name}")
            values.append(s[name]["first_answer_s"])
            colours.append(colour)
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(labels) + 1.5))
    ax.barh(labels, values, color=colours)
    ax.axvline(20, color="grey", ls="--", label="bar: 20 s")
    ax.set_xscale("log")
    ax.set_xlabel("seconds from `evigraph server start` to the first answered query (log scale)")
    ax.invert_yaxis()
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=50_000, help="records of the scale corpus to ingest")
    parser.add_argument("--edits", type=int, default=2_000, help="documents written again before each restart")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--small", type=int, default=1_000, help="records of part 3 (0: skip it)")
    parser.add_argument("--effects-records", type=int, default=10_000, help="records of part 4 (0: skip it)")
    parser.add_argument("--effects-rounds", type=int, default=3, help="ingests of part 4 per setting")
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"))
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    require_bench_files(*(args.data / d / "corpus.jsonl" for d in DATASETS))
    with tempfile.TemporaryDirectory(prefix="evigraph-restart-") as tmp:
        work = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(work / "state")  # the bench's servers stay out of the user's registry
        try:
            report = run(args, work)
        finally:
            for folder in (work / "server", work / "after"):
                if (folder / "server.pid").exists():
                    cli("server", "stop", "--dir", str(folder))
            shutil.rmtree(work, ignore_errors=True)
    print_table(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "server_restart.json").write_text(json.dumps(report, indent=2))
    plot(report, args.out / "server_restart.png")


if __name__ == "__main__":
    main()
