"""Cold start: a fresh `evigraph search`, a fresh stdio `evigraph mcp`'s first `retrieve`, and `evigraph --version`.

An agent session starts its own `evigraph mcp` over stdio, and a user types `evigraph search` in
a new shell: both pay for everything the process imports and builds before the answer. Each is
timed here as a new process, wall clock, next to the floor of any CLI call measured in the same
run: `evigraph --version` as a process.

Per embedder spec in --embedders (default `minilm,none`: the headline row, and a knowledge base
without vectors that shows the floor of everything but the embedder), the dataset's corpus is
ingested once into DB-DIR/<dataset>-<spec>.db (reused when it exists) with `evigraph ingest
--embedder SPEC`. Then, --repeats times, in rotated order so the machine's load falls on all alike:
  version  `evigraph --version`, spawn to exit
  search   `evigraph search "<question>" --db FILE`, spawn to exit (the knowledge base's recorded
           embedder is used, as a user gets it)
  mcp      a stdio `evigraph mcp --db FILE` started by the MCP SDK's own client, from spawn to its
           first `retrieve` answer (its handshake, `initialize`, timed on the way)
  sdk      `python -c "import mcp"`: what importing the MCP SDK alone costs a process; the stdio
           server no longer imports it (`evigraph.mcp.stdio`), so `mcp` may go below it
           (`mcp_sdk_import_vs_version`, kept to show what that saved)
Each repeat asks a different question of the dataset. Medians and every run are reported, and the
ratios `search_vs_version` and `mcp_first_retrieve_vs_version` (medians).

Before timing, the bytecode of the evigraph packages measured is compiled (`compileall`), as
`pip install` does for a user: a process started with PYTHONDONTWRITEBYTECODE (as some sandboxes
and CI set) otherwise compiles each of evigraph's modules from source on every start, 0.2 s of
CPU in a cold search that no installed evigraph pays. --as-is skips it (`bytecode` in the JSON).

With --baseline-src SRC (another checkout's `src`, e.g. the main branch's), `search` and `mcp` also
run with PYTHONPATH=SRC, in the same rotation, reported under `baseline` with their ratios to the
same `--version`: a before/after that shares the machine's load.

The breakdown (one more fresh process per embedder, --breakdown-repeats times, median per stage)
splits the same cold path into its stages, timed in order inside one process: importing what
`evigraph search` imports, what `evigraph mcp` adds (its modules;
the MCP SDK for a baseline whose stdio server used it), opening the
store, building the toolkit and the MCP server object, finding the question's names (graph
ranking's snapshot read and its stored names looked up; a baseline from before
`retrieval/question_names.py` runs the extractor here), loading the embedder (first text
embedded), embedding the question (the order a retrieve meets them in), the first retrieve (the
indexes built on first use), a second retrieve (warm, so first minus second is what the first one
built) and closing.

Prints a table, writes DIR/coldstart.json and DIR/coldstart.png.

    python bench/coldstart.py --data ../shared/bench/hotpotqa --out bench/out
    python bench/coldstart.py --data ../shared/bench/hotpotqa --out bench/out --embedders minilm --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import pyplot, require_dataset, run_child
from retrieval import read_jsonl

CALL_TIMEOUT_S = 600.0
SDK_IMPORT = "import mcp"
STAGES = (
    "imports_search",
    "imports_mcp",
    "open_store",
    "toolkit_and_server",
    "question_names",
    "embedder_load",
    "embed_question",
    "first_retrieve",
    "second_retrieve",
    "close",
)


def child_env(src: Path | None = None) -> dict[str, str]:
    """This environment without any EVIGRAPH_* setting: a developer's own must not choose the
    embedder; with `src`, evigraph is imported from there (a baseline checkout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def db_path(db_dir: Path, dataset: str, spec: str) -> Path:
    return db_dir / f"{dataset}-{re.sub(r'[^0-9A-Za-z_.-]+', '_', spec)}.db"


def compile_bytecode(src: Path | None) -> str:
    """Compile the bytecode of the evigraph package under `src` (None: the one this process
    imports), as an install does; its folder."""
    import compileall
    import importlib.util

    if src is not None:
        package = src / "evigraph"
    else:
        spec = importlib.util.find_spec("evigraph")
        assert spec is not None and spec.submodule_search_locations
        package = Path(next(iter(spec.submodule_search_locations)))
    if not compileall.compile_dir(str(package), quiet=1):
        raise SystemExit(f"compiling the bytecode of {package} failed")
    return str(package)


def ingest(corpus: Path, db: Path, spec: str) -> float | None:
    """Build the knowledge base with the CLI unless it exists; the seconds it took, or None if reused."""
    if db.exists():
        return None
    db.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "evigraph", "ingest", str(corpus), "--db", str(db), "--embedder", spec, "--quiet"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=child_env(), check=False)
    if done.returncode != 0:
        raise SystemExit(f"ingest with --embedder {spec} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def timed_process(
    argv: Sequence[str], cwd: Path, *, python_args: Sequence[str] = ("-m", "evigraph"), src: Path | None = None
) -> float:
    """Wall seconds of `python -m evigraph argv...` from spawn to exit; a failure stops the bench."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *python_args, *argv], capture_output=True, text=True, env=child_env(src), cwd=cwd, check=False
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"evigraph {' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    if argv[0] == "search" and not done.stdout.strip():
        raise SystemExit(f"evigraph search answered nothing:\n{done.stderr[-3000:]}")
    return seconds


async def mcp_first_retrieve(db: Path, question: str, log: Path, src: Path | None = None) -> tuple[float, float]:
    """(spawn to `initialize` answered, spawn to the first `retrieve` answered) of a fresh stdio server."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "evigraph", "mcp", "--db", str(db)], env=child_env(src), cwd=str(db.parent)
    )
    with log.open("a", encoding="utf-8") as err:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            initialized = time.perf_counter() - t0
            result = await client.call_tool("retrieve", {"question": question})
            answered = time.perf_counter() - t0
    if result.is_error or not result.content:
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        raise SystemExit(f"the MCP server's first retrieve failed: {text}\n(server log: {log})")
    return initialized, answered


def summary(runs: Sequence[float]) -> dict[str, Any]:
    return {"median_s": round(statistics.median(runs), 3), "runs_s": [round(r, 3) for r in runs]}


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b > 0 else None


# -- breakdown: one fresh process, the cold path's stages timed in order -------------------------


async def breakdown_stages(db: Path, questions: Sequence[str]) -> dict[str, float]:
    """Seconds per stage of a cold `search` / first MCP `retrieve`, in the order the process meets them."""
    stages: dict[str, float] = {}
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        stages[name] = now - t
        t = now

    import evigraph.cli
    import evigraph.cli.serving
    import evigraph.retrieval.query
    import evigraph.serving.forwarding
    from evigraph.kb import KnowledgeBase

    lap("imports_search")
    import evigraph.mcp.main
    import evigraph.mcp.server
    import evigraph.tools.toolkit

    try:  # the stdio server that speaks the protocol itself
        import evigraph.mcp.stdio
    except ImportError:  # a baseline serving stdio through the SDK, which `build_server` imports on first use
        import mcp.server

        del mcp
    del evigraph  # the imports above are the measurement
    lap("imports_mcp")
    kb = KnowledgeBase(db, read_only=True)
    await kb.open()
    if hasattr(kb, "warm_up"):
        kb.warm_up()
    lap("open_store")
    from evigraph.serving.backend import LocalBackend
    from evigraph.tools.toolkit import Toolkit

    backend = LocalBackend(Toolkit(kb, read_only=True))
    try:
        from evigraph.mcp.stdio import StdioServer

        StdioServer(backend)
    except ImportError:
        from evigraph.mcp.server import build_server

        build_server(backend)
    lap("toolkit_and_server")
    embedder = kb.embedder
    if embedder is not None:  # in retrieve's order: graph ranking finds the names, then the question is embedded
        if hasattr(kb, "_question_names"):  # a baseline that ran the extractor on the question; private
            await kb._question_names(questions[0])
        else:  # the stored-name finder, with the ranking snapshot it reads the names from
            await kb.graph_stage().plan(kb.store, questions[0])
        lap("question_names")
        embedder.embed_query("warm up")
        lap("embedder_load")
        embedder.embed_query(questions[0])
        lap("embed_question")
    await kb.retrieve(questions[0])
    lap("first_retrieve")
    await kb.retrieve(questions[1])
    lap("second_retrieve")
    await kb.close()
    lap("close")
    return {k: round(v, 4) for k, v in stages.items()}


def breakdown_child(args: argparse.Namespace) -> None:
    questions = [q["question"] for q in read_jsonl(args.data / "questions.jsonl", limit=2)]
    print(json.dumps(asyncio.run(breakdown_stages(args.db, questions))))


def breakdown(data: Path, db: Path, repeats: int, src: Path | None = None) -> dict[str, Any]:
    """Median seconds per stage over `repeats` fresh processes, with the process's own wall clock."""
    runs: list[dict[str, float]] = []
    walls: list[float] = []
    for _ in range(repeats):
        argv = [__file__, "--child", "breakdown", "--data", str(data), "--db", str(db)]
        child = run_child(argv, env=child_env(src))
        if not child.ok:
            raise SystemExit(f"breakdown failed:\n{child.error}")
        runs.append(child.data)
        walls.append(child.seconds)
    out: dict[str, Any] = {s: round(statistics.median(r[s] for r in runs), 3) for s in STAGES if s in runs[0]}
    out["index_build_estimate"] = round(max(0.0, out["first_retrieve"] - out["second_retrieve"]), 3)
    out["process_wall"] = round(statistics.median(walls), 3)
    out["unaccounted"] = round(out["process_wall"] - sum(out[s] for s in STAGES if s in out), 3)
    return out


# -- the run -------------------------------------------------------------------------------------


def knowledge_bases(args: argparse.Namespace) -> dict[str, Path]:
    """Each embedder spec's knowledge base file; stops, saying where the data belongs, when one
    is missing and so is the corpus to build it from (before anything is written)."""
    specs = [s.strip() for s in args.embedders.split(",") if s.strip()]
    db_dir: Path = args.db_dir or args.out / "coldstart_kb"
    dbs = {spec: db_path(db_dir, args.data.name, spec) for spec in specs}
    for db in dbs.values():
        require_dataset(args.data, db)
    return dbs


def run(args: argparse.Namespace, dbs: dict[str, Path]) -> dict[str, Any]:
    data: Path = args.data
    specs = list(dbs)
    questions = [q["question"] for q in read_jsonl(data / "questions.jsonl")]
    report: dict[str, Any] = {"dataset": data.name, "repeats": args.repeats, "embedders": {}}
    if args.as_is:
        report["bytecode"] = "as the environment gives it"
    else:
        compiled = [compile_bytecode(None)] + ([compile_bytecode(args.baseline_src)] if args.baseline_src else [])
        report["bytecode"] = f"compiled before timing: {', '.join(compiled)}"
    for spec, db in dbs.items():
        seconds = ingest(data / "corpus.jsonl", db, spec)
        report["embedders"][spec] = {"db": str(db), "ingest_seconds": None if seconds is None else round(seconds, 1)}
        how = "reused" if seconds is None else f"built in {seconds:.0f} s"
        print(f"{spec}: knowledge base {how}: {db}", file=sys.stderr)
    log = args.out / "coldstart_mcp.log"
    base: Path | None = args.baseline_src
    variants = ["", "@base"] if base is not None else [""]
    times: dict[str, list[float]] = {"version": [], "sdk": []}
    jobs = ["version", "sdk"]
    for spec in specs:
        for v in variants:
            times |= {f"search:{spec}{v}": [], f"mcp:{spec}{v}": [], f"mcp_init:{spec}{v}": []}
            jobs += [f"search:{spec}{v}", f"mcp:{spec}{v}"]
    for r in range(args.repeats):
        question = questions[r % len(questions)]
        shift = r % len(jobs)
        for job in jobs[shift:] + jobs[:shift]:  # rotated, so no job always runs after the same one
            kind, _, rest = job.partition(":")
            spec, _, variant = rest.partition("@")
            src = base if variant else None
            if kind == "version":
                times["version"].append(timed_process(["--version"], args.out))
            elif kind == "sdk":
                times["sdk"].append(timed_process([SDK_IMPORT], args.out, python_args=("-c",)))
            elif kind == "search":
                times[job].append(timed_process(["search", question, "--db", str(dbs[spec])], args.out, src=src))
            else:
                init, answered = asyncio.run(mcp_first_retrieve(dbs[spec], question, log, src))
                times[f"mcp_init:{rest}"].append(init)
                times[job].append(answered)
            print(f"  repeat {r + 1}/{args.repeats} {job}: {times[job][-1]:.2f} s", file=sys.stderr)
    version = statistics.median(times["version"])
    report["version"] = summary(times["version"])
    report["mcp_sdk_import"] = summary(times["sdk"])
    report["mcp_sdk_import_vs_version"] = ratio(report["mcp_sdk_import"]["median_s"], version)
    if base is not None:
        report["baseline"] = {"src": str(base), "embedders": {spec: {} for spec in specs}}
    for spec in specs:
        for v in variants:
            row = report["embedders"][spec] if not v else report["baseline"]["embedders"][spec]
            row["search"] = summary(times[f"search:{spec}{v}"])
            row["mcp_first_retrieve"] = summary(times[f"mcp:{spec}{v}"])
            row["mcp_initialize"] = summary(times[f"mcp_init:{spec}{v}"])
            row["search_vs_version"] = ratio(row["search"]["median_s"], version)
            row["mcp_first_retrieve_vs_version"] = ratio(row["mcp_first_retrieve"]["median_s"], version)
            if args.breakdown_repeats > 0:
                row["breakdown_s"] = breakdown(data, dbs[spec], args.breakdown_repeats, base if v else None)
    head = report["embedders"][specs[0]]
    report["headline_embedder"] = specs[0]
    report["search_s"] = head["search"]["median_s"]
    report["mcp_first_retrieve_s"] = head["mcp_first_retrieve"]["median_s"]
    report["version_s"] = report["version"]["median_s"]
    report["search_vs_version"] = head["search_vs_version"]
    report["mcp_first_retrieve_vs_version"] = head["mcp_first_retrieve_vs_version"]
    return report


def print_table(report: dict[str, Any]) -> None:
    print(f"\ncold start on {report['dataset']}, {report['repeats']} runs each, median seconds (ratio to --version)")
    print(f"{'':<22}{'version':>9}{'search':>16}{'mcp retrieve':>18}{'mcp init':>10}")
    version = report["version"]["median_s"]
    for spec, row in report["embedders"].items():
        search, mcp = row["search"]["median_s"], row["mcp_first_retrieve"]["median_s"]
        print(
            f"{spec:<22}{version:>9.2f}{search:>9.2f} ({row['search_vs_version']:>4.1f}x)"
            f"{mcp:>11.2f} ({row['mcp_first_retrieve_vs_version']:>4.1f}x){row['mcp_initialize']['median_s']:>10.2f}"
        )
    for spec, row in report.get("baseline", {}).get("embedders", {}).items():
        search, mcp = row["search"]["median_s"], row["mcp_first_retrieve"]["median_s"]
        print(
            f"{'baseline ' + spec:<22}{version:>9.2f}{search:>9.2f} ({row['search_vs_version']:>4.1f}x)"
            f"{mcp:>11.2f} ({row['mcp_first_retrieve_vs_version']:>4.1f}x){row['mcp_initialize']['median_s']:>10.2f}"
        )
    sdk = report["mcp_sdk_import"]["median_s"]
    sdk_ratio = report["mcp_sdk_import_vs_version"]
    print(f"{'python -c import mcp':<22}{sdk:>9.2f} ({sdk_ratio:.1f}x): what the SDK's import alone costs")
    rows = [(spec, row) for spec, row in report["embedders"].items()]
    rows += [(f"baseline {spec}", row) for spec, row in report.get("baseline", {}).get("embedders", {}).items()]
    for name, row in rows:
        parts = row.get("breakdown_s")
        if parts:
            print(f"breakdown {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items()))


def plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    specs = list(report["embedders"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = ["version", "import\nmcp", *(f"{k}\n{s}" for s in specs for k in ("search", "mcp"))]
    series = [report["version"]["runs_s"], report["mcp_sdk_import"]["runs_s"]]
    for spec in specs:
        row = report["embedders"][spec]
        series += [row["search"]["runs_s"], row["mcp_first_retrieve"]["runs_s"]]
    for i, runs in enumerate(series):
        left.bar(i, statistics.median(runs), color="tab:gray" if i < 2 else "tab:blue", alpha=0.6)
        left.scatter([i] * len(runs), runs, color="black", s=10, zorder=3)
    left.axhline(10 * report["version"]["median_s"], color="tab:red", linestyle="--", label="10x --version")
    left.set_xticks(range(len(labels)), labels, fontsize=8)
    left.set_ylabel("seconds, spawn to answer")
    left.set_title(f"cold start ({report['dataset']}): median and runs")
    left.legend()
    bottom = [0.0] * len(specs)
    for i, stage in enumerate((*STAGES, "unaccounted")):
        values = [max(0.0, report["embedders"][s].get("breakdown_s", {}).get(stage, 0.0)) for s in specs]
        if any(values):
            right.bar(specs, values, bottom=bottom, label=stage, color=plt.get_cmap("tab20")(i))
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    right.set_ylabel("seconds (median per stage)")
    right.set_title("where a cold answer's time goes (one process)")
    if any(bottom):  # no breakdown asked (--breakdown-repeats 0): an empty panel, no legend
        right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a dataset folder: corpus.jsonl, questions.jsonl")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument(
        "--embedders", default="minilm,none", help="embedder specs, one knowledge base each; the first is the headline"
    )
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes of each kind")
    parser.add_argument("--breakdown-repeats", type=int, default=3, help="breakdown processes per embedder (0: none)")
    parser.add_argument(
        "--db-dir", type=Path, help="where the knowledge bases are built or reused (default OUT/coldstart_kb)"
    )
    parser.add_argument(
        "--baseline-src", type=Path, help="another checkout's src folder: its search and mcp run in the same rotation"
    )
    parser.add_argument("--as-is", action="store_true", help="do not compile evigraph's bytecode before timing")
    parser.add_argument("--child", choices=("breakdown",), help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        breakdown_child(args)
        return
    args.data, args.out = args.data.resolve(), args.out.resolve()
    if args.db_dir is not None:
        args.db_dir = args.db_dir.resolve()
    if args.baseline_src is not None:
        args.baseline_src = args.baseline_src.resolve()
    dbs = knowledge_bases(args)
    args.out.mkdir(parents=True, exist_ok=True)
    report = run(args, dbs)
    (args.out / "coldstart.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_table(report)
    plot(report, args.out / "coldstart.png")
    print(f"wrote {args.out / 'coldstart.json'} and coldstart.png", file=sys.stderr)


if __name__ == "__main__":
    main()
