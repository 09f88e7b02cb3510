"""Engine checkpoints: what each write shape of an ingest costs the engine to make durable.

    python bench/engine_checkpoint.py --out bench/out
    python bench/engine_checkpoint.py --out bench/out --engines kuzu,ladybug --relations 225000

At 100,000 passages the ingest spends most of its time in commits, where the engine checkpoints
(README, "Where the memory goes"). This bench isolates that cost. In a fresh child process per
engine, it creates evigraph's real schema (`store/embedded/schema.DDL`) and fills it to the size of
a late 100k ingest: `--entities` entities, `--relations` relations between random ones, each with
a fact of `--fact-chars` characters and about `--sources` passage ids in `source_chunks`. Then it
writes each shape an ingest's write group makes, in a transaction of its own, through the store's
own write functions, and times the statements and the explicit CHECKPOINT after its COMMIT apart:

- `append_sources`: new passages added as sources of existing relations (`writes.write_relations`
  with fresh sources, as an ingest's write calls it: appended to `source_chunks`, confidence kept
  at the higher);
- `new_relations`: new relations between existing entities (the same call);
- `new_mentions`: mentions of existing entities in new passages (`writes.create_mentions`);
- `confidence_only`: the control, a fixed-width column of existing relations set (no text
  rewritten), which no ingest write does alone.

Each shape runs `--rounds` times; the table grows by the rows each round adds. Ratios: each
shape's checkpoint against `new_mentions`' in the same process, and each engine's against the
first engine's. An engine that is not installed is reported as skipped.

Writes DIR/engine-checkpoint.json and DIR/engine-checkpoint.png.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import pyplot, run_child
from _latency import ratio

SHAPES = ("append_sources", "new_relations", "new_mentions", "confidence_only")
BASELINE_SHAPE = "new_mentions"
SEED = 20261207
SIZES = ("entities", "relations", "sources", "fact_chars", "rows", "rounds", "pool_mb")

CONFIDENCE = """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid
    MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
    SET x.confidence = 0.75 RETURN count(*)"""
"""The control shape: a fixed-width column, which no write of an ingest sets on its own."""


def passage_id(i: int) -> str:
    """Shaped like `version_rows.chunk_id`: 12 hex digits, version, index."""
    return f"{i:012x}:1:{i % 7}"


def relation(s: str, d: str, rid: str, fact: str, sources: list[str]) -> dict[str, Any]:
    """A relation row as `version_rows` makes it and `writes.write_relations` takes it."""
    return {"s": s, "d": d, "id": rid, "type": "RELATED_TO", "fact": fact, "conf": 0.5, "src": sources}


def phase_engine(engine: str, sizes: dict[str, Any]) -> dict[str, Any]:
    """Fill one engine's file, then time every shape's statements and checkpoint, `rounds` times.

    The shapes other than the control are written by the embedded store's own functions
    (`writes.write_relations` with fresh sources, as an ingest's write calls it, and
    `writes.create_mentions`), so the bench times the statements an ingest runs."""
    from evigraph.store.embedded import writes
    from evigraph.store.embedded.engine import import_engine
    from evigraph.store.embedded.executor import Tx
    from evigraph.store.embedded.schema import DDL

    module = import_engine(engine)
    rng = random.Random(SEED)
    entities, relations, rows = sizes["entities"], sizes["relations"], sizes["rows"]
    fact = "x" * sizes["fact_chars"]
    with tempfile.TemporaryDirectory(prefix="evigraph-ckpt-") as tmp:
        path = Path(tmp) / "kb.db"
        db = module.Database(str(path), buffer_pool_size=sizes["pool_mb"] << 20)
        conn = module.Connection(db)
        tx = Tx(conn)  # outside BEGIN, each statement commits on its own (the fill)
        conn.execute("CALL checkpoint_threshold=1099511627776")  # checkpoints only where timed
        for statement in DDL:
            conn.execute(statement)

        def count(pattern: str) -> int:
            return int(tx.column(f"MATCH {pattern} RETURN count(*)")[0])

        t0 = time.perf_counter()
        tx.run_batched("UNWIND $rows AS id CREATE (:Entity {id: id, name: id})", [f"e{i}" for i in range(entities)])
        tx.run_batched("UNWIND $rows AS id CREATE (:Chunk {id: id})", [passage_id(i) for i in range(relations)])
        known: list[dict[str, Any]] = []
        for start in range(0, relations, writes.EDGE_BATCH):
            batch = {}
            for i in range(start, min(start + writes.EDGE_BATCH, relations)):
                n = max(1, round(rng.expovariate(1 / sizes["sources"])))
                sources = [passage_id(rng.randrange(relations)) for _ in range(n)]
                row = relation(f"e{rng.randrange(entities)}", f"e{rng.randrange(entities)}", f"r{i}", fact, sources)
                batch[row["id"]] = row
            writes.write_relations(tx, batch, fresh_sources=True)
            known.extend(batch.values())
            conn.execute("CHECKPOINT")
        filled = time.perf_counter() - t0

        def write(shape: str, round_: int, new: list[str], picked: list[dict[str, Any]]) -> int | None:
            """One shape's rows; how many it wrote where its function says (else counted after)."""
            if shape == "append_sources":
                appended = {r["id"]: {**r, "src": [rng.choice(new)]} for r in picked}
                return writes.write_relations(tx, appended, fresh_sources=True)  # the relations it found
            if shape == "new_relations":
                made = [
                    relation(f"e{rng.randrange(entities)}", f"e{rng.randrange(entities)}", f"n{round_}-{i}", fact, [c])
                    for i, c in enumerate(rng.choices(new, k=rows))
                ]
                writes.write_relations(tx, {r["id"]: r for r in made}, fresh_sources=True)
                return None
            if shape == "new_mentions":
                mentions = [
                    {"e": f"e{rng.randrange(entities)}", "c": c, "s": [0], "t": [9]} for c in rng.choices(new, k=rows)
                ]
                writes.create_mentions(tx, mentions)
                return None
            return int(sum(tx.column(CONFIDENCE, {"rows": picked})))

        def counts() -> dict[str, int]:
            """Relations and mentions held, by the shape that creates them."""
            return {
                shape: int(tx.column(f"MATCH {pattern} RETURN count(*)")[0])
                for shape, pattern in (
                    ("new_relations", "()-[:RELATES]->()"),
                    ("new_mentions", "()-[:MENTIONED_IN]->()"),
                )
            }

        trials: list[dict[str, Any]] = []
        for round_ in range(sizes["rounds"]):
            new = [passage_id(relations + round_ * rows + i) for i in range(rows)]
            tx.run_batched("UNWIND $rows AS id CREATE (:Chunk {id: id})", new)
            conn.execute("CHECKPOINT")
            picked = rng.sample(known, rows)
            for shape in SHAPES:
                before = counts()
                conn.execute("BEGIN TRANSACTION")
                t1 = time.perf_counter()
                written = write(shape, round_, new, picked)
                t2 = time.perf_counter()
                conn.execute("COMMIT")
                t3 = time.perf_counter()
                conn.execute("CHECKPOINT")
                t4 = time.perf_counter()
                if written is None:
                    written = counts()[shape] - before[shape]
                trials.append(
                    {
                        "round": round_,
                        "shape": shape,
                        "rows": written,
                        "statement_s": t2 - t1,
                        "commit_s": t3 - t2,
                        "checkpoint_s": t4 - t3,
                    }
                )
        file_mb = path.stat().st_size / 2**20
        conn.close()
        db.close()
    return {
        "engine": engine,
        "version": getattr(module, "__version__", "?"),
        "fill_s": filled,
        "file_mb": file_mb,
        "trials": trials,
    }


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Median checkpoint seconds per shape, and each against the baseline shape's."""
    import statistics

    by_shape = {
        shape: statistics.median(t["checkpoint_s"] for t in result["trials"] if t["shape"] == shape) for shape in SHAPES
    }
    return {
        "checkpoint_s": by_shape,
        "vs_new_mentions": {shape: ratio(s, by_shape[BASELINE_SHAPE]) for shape, s in by_shape.items()},
    }


def plot(out: Path, engines: dict[str, dict[str, Any]]) -> None:
    plt = pyplot()
    if plt is None or not engines:
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(engines)
    for k, (name, summary) in enumerate(engines.items()):
        values = [summary["checkpoint_s"][shape] for shape in SHAPES]
        ax.bar([i + k * width for i in range(len(SHAPES))], values, width, label=name)
    ax.set_xticks([i + width * (len(engines) - 1) / 2 for i in range(len(SHAPES))], SHAPES)
    ax.set_ylabel("checkpoint after COMMIT, s (median)")
    ax.set_yscale("log")
    ax.set_title("What each write shape costs the engine's checkpoint")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "engine-checkpoint.png", dpi=120)


def positive(kind: type[int] | type[float]) -> Any:
    """An argparse type: a number above zero, or a usage error naming the value."""

    def parse(text: str) -> int | float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not above zero")
        return value

    return parse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--engines", default="ladybug", help="comma-separated: ladybug, kuzu")
    parser.add_argument("--entities", type=positive(int), default=144_000, help="a 100k-passage ingest made 144,011")
    parser.add_argument("--relations", type=positive(int), default=225_000, help="a 100k-passage ingest made 224,842")
    parser.add_argument("--sources", type=positive(float), default=10.5, help="passages a relation (mean), as at 100k")
    parser.add_argument("--fact-chars", type=positive(int), default=239, help="a fact's length (mean), as at 100k")
    parser.add_argument("--rows", type=positive(int), default=20_000, help="rows each shape writes a round")
    parser.add_argument("--rounds", type=positive(int), default=2)
    parser.add_argument("--pool-mb", type=positive(int), default=4096)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = {k: getattr(args, k) for k in SIZES}
    if args.rows > args.relations:
        parser.error(f"--rows {args.rows} is more than --relations {args.relations}: the appends pick distinct ones")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines:
        parser.error("--engines names no engine: pass kuzu, ladybug or both")
    if args.phase == "engine":
        print(json.dumps(phase_engine(args.engine, settings)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"settings": settings, "engines": {}, "skipped": {}}
    for engine in engines:
        argv = [__file__, "--phase", "engine", "--engine", engine, "--out", str(args.out)]
        argv += [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
        child = run_child(argv, env=dict(os.environ))
        if not child.ok:
            lines = [line for line in child.error.strip().splitlines() if line and not line.startswith("[child")]
            report["skipped"][engine] = lines[-1] if lines else child.error.strip() or "failed"
            print(f"{engine}: skipped ({report['skipped'][engine]})", file=sys.stderr)
            continue
        report["engines"][engine] = {**child.data, **summarise(child.data)}
    summaries = report["engines"]
    first = next(iter(summaries.values()), None)
    for summary in summaries.values():
        summary["vs_first_engine"] = {s: ratio(summary["checkpoint_s"][s], first["checkpoint_s"][s]) for s in SHAPES}
    (args.out / "engine-checkpoint.json").write_text(json.dumps(report, indent=2))
    plot(args.out, summaries)
    for engine, summary in summaries.items():
        cells = ", ".join(f"{s} {summary['checkpoint_s'][s]:.2f} s" for s in SHAPES)
        print(f"{engine}: checkpoint medians: {cells}")


if __name__ == "__main__":
    main()
