"""Crash safety: SIGKILL `evigraph` commands at random points, then check, re-run and compare.

Operations, each on its own copy of a prepared knowledge base: ingest into a new database,
ingest into an existing one (half the files new), delete a document, update (re-ingest after
editing a third of the files) and finalize. Each trial kills the command after a random share
of its unkilled run time, then: the database opens, `status` and `search` work, `check` runs
(its findings before the re-run are recorded), the killed command is re-run to completion,
`check` must find nothing (else `check --repair` is tried), and the counts and the whole graph
(`integrity.snapshot`) must equal the same command run unkilled on the same starting database
in this run.
Every key must also keep, in `VERSION_SEQ`, at least the version it had before the trial and the
one it has after, so no version number (and passage id) can be given again, a killed delete
included.

A trial is clean (nothing found after the re-run, graph equal), repaired (something found,
repair fixed it, graph equal) or lost (the database did not open or answer, repair left
problems, or the graph differs).

    python bench/crash.py --corpus ../shared/bench/musique/corpus.jsonl --trials 24 --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import pyplot, require_bench_files
from evigraph.cli.options import ENGINES

OPERATIONS = ("ingest_new", "ingest_existing", "delete", "update", "finalize")
QUESTION = "Who directed the film?"


@dataclass
class Operation:
    """A command to kill and the database it starts from (None: a new one)."""

    name: str
    docs: Path
    argv: list[str]
    base: Path | None
    seconds: float = 0.0
    reference: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    """Each key's version in the starting database."""


@dataclass
class Trial:
    operation: str
    delay: float
    killed: bool
    created: bool
    writing: bool
    opened: bool = False
    searched: bool = False
    found_before: list[str] = field(default_factory=list)
    rerun_code: int = 0
    found_after: list[str] = field(default_factory=list)
    repaired: bool = False
    counts_equal: bool = False
    graph_equal: bool = False
    numbers_kept: bool = False
    error: str = ""

    @property
    def outcome(self) -> str:
        kept = self.opened and self.searched and self.counts_equal and self.graph_equal and self.numbers_kept
        if not kept or self.error:
            return "lost"
        return "repaired" if self.found_after or self.found_before else "clean"


ENGINE = "auto"
"""`--engine`: the engine every database of the run is created and opened with ("auto": LadybugDB
for a new file, an existing file's own engine)."""


def location(db: Path) -> str:
    return str(db) if ENGINE == "auto" else f"{ENGINE}://{db.resolve()}"


def cli(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "evigraph.cli", *args, "--db", location(db)]


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)


def read_records(corpus: Path, n: int) -> list[tuple[str, str]]:
    records = []
    with corpus.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            records.append((r["title"], r["text"]))
            if len(records) == n:
                break
    return records


def put(docs: Path, records: list[tuple[str, str]], edited: frozenset[int] = frozenset()) -> list[Path]:
    docs.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (title, text) in enumerate(records):
        body = f"{title}\n\n{text}\n"
        if i in edited:  # an appended sentence and a replaced one: new, kept and dropped entities
            body = body.replace(".", ". Margaret Thatcher met Kofi Annan in Geneva.", 1)
            body += "\nIn 1999 the Acme Corporation opened an office in Lisbon.\n"
        path = docs / f"d{i:03}.txt"
        path.write_text(body, encoding="utf-8")
        paths.append(path)
    return paths


def ingest(db: Path, paths: list[Path]) -> None:
    proc = run(cli(db, "ingest", "-q", "--extractor", "rules", *map(str, paths)))
    if proc.returncode != 0:
        raise SystemExit(f"setup ingest failed: {proc.stderr[-2000:]}")


def prepare(records: list[tuple[str, str]], root: Path) -> list[Operation]:
    """Folders and starting databases for every operation; each keeps its files for all its trials."""
    ops = []
    half = len(records) // 2
    d = root / "ingest_new" / "docs"
    paths = put(d, records)
    ops.append(Operation("ingest_new", d, ["ingest", "-q", "--extractor", "rules", str(d)], None))

    d = root / "ingest_existing" / "docs"
    paths = put(d, records)
    ingest(root / "ingest_existing" / "base.db", paths[:half])
    ops.append(Operation("ingest_existing", d, ["ingest", "-q", "--extractor", "rules", str(d)], d.parent / "base.db"))

    d = root / "delete" / "docs"
    paths = put(d, records)
    ingest(root / "delete" / "base.db", paths)
    victim = max(paths, key=lambda p: p.stat().st_size)
    ops.append(Operation("delete", d, ["delete", str(victim)], d.parent / "base.db"))

    d = root / "update" / "docs"
    paths = put(d, records)
    ingest(root / "update" / "base.db", paths)
    put(d, records, edited=frozenset(range(0, len(records), 3)))
    ops.append(Operation("update", d, ["ingest", "-q", "--extractor", "rules", str(d)], d.parent / "base.db"))

    d = root / "finalize" / "docs"
    paths = put(d, records)
    ingest(root / "finalize" / "base.db", paths)
    ops.append(Operation("finalize", d, ["finalize"], d.parent / "base.db"))
    return ops


async def inspect(db: Path) -> dict[str, Any]:
    """Counts, the canonical graph and the check findings of a knowledge base (read-only)."""
    from evigraph import KnowledgeBase
    from evigraph.store.embedded import integrity
    from evigraph.store.embedded.schema import VERSION_SEQ
    from evigraph.store.embedded.store import EmbeddedStore

    async with KnowledgeBase(location(db), read_only=True) as kb:
        status = await kb.status()
        await kb.open()
        store = kb.store
        assert store is not None
        assert isinstance(store, EmbeddedStore)
        snapshot = await store.executor.read(integrity.snapshot)
        versions = await store.executor.read(
            lambda tx: {r["k"]: int(r["v"]) for r in tx.rows("MATCH (d:Document) RETURN d.key AS k, d.version AS v")}
        )
        marks = await store.executor.read(
            lambda tx: {r["k"]: int(r["n"]) for r in tx.rows(f"MATCH (s:{VERSION_SEQ}) RETURN s.key AS k, s.n AS n")}
        )
        report = await kb.check()
    return {
        "counts": {k: getattr(status, k) for k in ("documents", "passages", "entities", "relations", "mentions")},
        "snapshot": snapshot,
        "found": [f"{p.kind}:{p.count}" for p in report.found],
        "versions": versions,
        "marks": marks,
    }


def timed_run(op: Operation, db: Path) -> float:
    t0 = time.perf_counter()
    proc = run(cli(db, *op.argv))
    if proc.returncode != 0:
        raise SystemExit(f"{op.name} failed unkilled: {proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def fresh_copy(op: Operation, db: Path) -> None:
    if db.parent.exists():
        shutil.rmtree(db.parent)
    db.parent.mkdir(parents=True)
    if op.base is not None:
        shutil.copy(op.base, db)


async def trial(op: Operation, db: Path, rng: random.Random) -> Trial:
    from evigraph import KnowledgeBase

    fresh_copy(op, db)
    delay = rng.uniform(0.15, 1.0) * op.seconds  # the end included: the checkpoint at close
    writing = False
    proc = subprocess.Popen(cli(db, *op.argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        # Writing when killed: a write-ahead log not yet checkpointed, or a new file being built.
        writing = db.with_name(db.name + ".wal").exists() or any(db.parent.glob(f".{db.name}.*.creating"))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed = True
    t = Trial(op.name, round(delay, 3), killed, db.exists(), killed and writing)
    try:
        if db.exists():
            async with KnowledgeBase(location(db), read_only=True) as kb:
                await kb.status()
                t.opened = True
                await kb.retrieve(QUESTION)
                t.searched = True
                t.found_before = [f"{p.kind}:{p.count}" for p in (await kb.check()).found]
        else:  # killed before the new database was linked into place: nothing to open, nothing lost
            t.opened = t.searched = op.base is None
        t.rerun_code = run(cli(db, *op.argv)).returncode
        after = await inspect(db)
        t.found_after = after["found"]
        if t.found_after:
            t.repaired = run(cli(db, "check", "--repair")).returncode == 0
            after = await inspect(db)
        t.counts_equal = after["counts"] == op.reference["counts"]
        t.graph_equal = after["snapshot"] == op.reference["snapshot"]
        given = {k: max(op.versions.get(k, 0), after["versions"].get(k, 0)) for k in {*op.versions, *after["versions"]}}
        t.numbers_kept = all(after["marks"].get(k, 0) >= n for k, n in given.items())
        if not t.numbers_kept:
            t.error = f"version numbers kept {after['marks']}, below those given {given}"
        if not t.counts_equal:
            t.error = f"counts {after['counts']} != reference {op.reference['counts']}"
    except Exception as exc:  # a bench records every failure and goes on
        t.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return t


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    records = read_records(args.corpus, args.records)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="evigraph-crash-") as tmp:
        root = Path(tmp)
        ops = prepare(records, root)
        for op in ops:
            op.versions = (await inspect(op.base))["versions"] if op.base is not None else {}
            db, seconds = root / op.name / "trial" / "kb.db", []
            for _ in range(3):  # the median of three: load on a shared machine varies
                fresh_copy(op, db)
                seconds.append(timed_run(op, db))
            op.seconds = sorted(seconds)[1]
            # The reference is where an unkilled run ends, not a clean rebuild of the final files:
            # offline typing reads its cues across the documents extracted together, so adding
            # half the files to a knowledge base holding the other half types a name or two
            # differently from one ingest of everything (30 musique records: 376 entities against
            # 370) with no kill at all, and every such trial counted as lost.
            op.reference = await inspect(db)
            print(f"{op.name:<16} unkilled {op.seconds:5.2f} s, reference {op.reference['counts']}", file=sys.stderr)
        trials: list[Trial] = []
        for i in range(args.trials):
            lost = sum(t.outcome == "lost" for t in trials)
            print(f"round {i + 1}/{args.trials}: {len(trials)} trials so far, {lost} lost", file=sys.stderr, flush=True)
            for op in ops:
                t = await trial(op, root / op.name / "trial" / "kb.db", rng)
                trials.append(t)
                if t.outcome != "clean":
                    print(
                        f"  trial {i} {op.name}: {t.outcome} {t.found_before} {t.found_after} {t.error}",
                        file=sys.stderr,
                    )
        return {
            "records": len(records),
            "engine": ENGINE,
            "operations": {
                op.name: {"unkilled_seconds": round(op.seconds, 2), "reference": op.reference["counts"]} for op in ops
            },
            "trials": [asdict(t) | {"outcome": t.outcome} for t in trials],
        }


def summarise(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name in [*OPERATIONS, "total"]:
        ts = [t for t in result["trials"] if name in (t["operation"], "total")]
        rows.append(
            {
                "operation": name,
                "trials": len(ts),
                "killed": sum(t["killed"] for t in ts),
                "writing": sum(t["writing"] for t in ts),
                "clean": sum(t["outcome"] == "clean" for t in ts),
                "repaired": sum(t["outcome"] == "repaired" for t in ts),
                "lost": sum(t["outcome"] == "lost" for t in ts),
                "found_before_rerun": sum(bool(t["found_before"]) for t in ts),
                "found_after_rerun": sum(bool(t["found_after"]) for t in ts),
                "numbers_reused": sum(not t["numbers_kept"] for t in ts),
            }
        )
    return rows


def report(rows: list[dict[str, Any]], result: dict[str, Any], out: Path) -> None:
    cols = list(rows[0])
    widths = [max(len(c), 16 if c == "operation" else 5) for c in cols]
    print(" | ".join(f"{c:<{w}}" for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        print(" | ".join(f"{r[c]!s:<{w}}" for c, w in zip(cols, widths, strict=True)))
    print("reference (the command unkilled, same run):")
    for name, info in result["operations"].items():
        print(f"  {name:<16} {info['reference']}  unkilled {info['unkilled_seconds']} s")
    out.mkdir(parents=True, exist_ok=True)
    (out / "crash.json").write_text(json.dumps({"summary": rows, **result}, indent=2))
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["operation"] for r in rows[:-1]]
    bottom = [0] * len(names)
    for outcome, colour in (("clean", "tab:green"), ("repaired", "tab:orange"), ("lost", "tab:red")):
        values = [r[outcome] for r in rows[:-1]]
        ax.bar(names, values, bottom=bottom, label=outcome, color=colour)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("trials (SIGKILL at a random point)")
    ax.set_title(f"evigraph crash safety: {rows[-1]['trials']} trials, {rows[-1]['lost']} lost")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "crash.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = Path(__file__).resolve().parent
    parser.add_argument("--corpus", type=Path, default=here.parent.parent / "shared/bench/musique/corpus.jsonl")
    parser.add_argument("--records", type=int, default=30, help="records written as .txt files (default 30)")
    parser.add_argument("--trials", type=int, default=24, help="trials per operation (default 24: 120 in all)")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--engine", choices=ENGINES, default="auto", help="the embedded engine (default auto: Kuzu)")
    args = parser.parse_args()
    require_bench_files(args.corpus)
    global ENGINE
    ENGINE = args.engine
    result = asyncio.run(bench(args))
    report(summarise(result), result, args.out)


if __name__ == "__main__":
    main()
