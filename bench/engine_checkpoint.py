"""Engine checkpoints: what each write shape of an ingest costs the engine to make durable.

    python bench/engine_checkpoint.py --out bench/out
    python bench/engine_checkpoint.py --out bench/out --engines kuzu,ladybug --relations 225000

At 100,000 passages the ingest spends most of its time in commits, where the engine checkpoints
(README, "Where the memory goes"). This bench isolates that cost. In a fresh child process per
engine, it creates evigraph's real schema (`store/embedded/schema.DDL`) and fills it to the size of
a late 100k ingest: `--entities` entities, `--relations` relations between random ones, each with
a fact of `--fact-chars` characters and about `--sources` passage ids in `source_chunks`. Then it
writes each shape an ingest's write group makes, in a transaction of its own, and times the
statement and the explicit CHECKPOINT after its COMMIT apart:

- `append_sources`: the passages of a new group appended to existing relations' `source_chunks`
  (`writes._append_sources`'s statement);
- `new_relations`: new relations between existing entities;
- `new_mentions`: mentions of existing entities in new passages;
- `confidence_only`: a fixed-width column of existing relations set (no text rewritten).

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
FILL_BATCH = 50_000  # rows a statement while filling, as `writes.EDGE_BATCH`

APPEND = """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid, r.src AS src
    MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
    SET x.source_chunks = x.source_chunks + ' ' + src RETURN count(*)"""
NEW_RELATIONS = """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid, r.fact AS fact, r.src AS src
    MATCH (a:Entity {id: s}) WITH a, d, rid, fact, src MATCH (b:Entity {id: d})
    CREATE (a)-[:RELATES {id: rid, type: 'RELATED_TO', fact: fact, confidence: 0.5,
                          source_chunks: src, _source: 'extraction'}]->(b) RETURN count(*)"""
NEW_MENTIONS = """UNWIND $rows AS r WITH r.e AS e_id, r.c AS c_id
    MATCH (e:Entity {id: e_id}) WITH e, c_id MATCH (c:Chunk {id: c_id})
    CREATE (e)-[:MENTIONED_IN {span_starts: '0', span_ends: '9'}]->(c) RETURN count(*)"""
CONFIDENCE = """UNWIND $rows AS r WITH r.s AS s, r.d AS d, r.id AS rid
    MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
    SET x.confidence = 0.75 RETURN count(*)"""


def passage_id(i: int) -> str:
    """Shaped like `version_rows.chunk_id`: 12 hex digits, version, index."""
    return f"{i:012x}:1:{i % 7}"


def import_module(engine: str) -> Any:
    from evigraph.store.embedded.engine import import_engine

    return import_engine(engine)


def phase_engine(engine: str, args: dict[str, Any]) -> dict[str, Any]:
    """Fill one engine's file, then time every shape's statement and checkpoint, `rounds` times."""
    from evigraph.store.embedded.schema import DDL

    module = import_module(engine)
    rng = random.Random(SEED)
    entities, relations, rows_per = int(args["entities"]), int(args["relations"]), int(args["rows"])
    with tempfile.TemporaryDirectory(prefix="evigraph-ckpt-") as tmp:
        path = Path(tmp) / "kb.db"
        db = module.Database(str(path), buffer_pool_size=int(args["pool_mb"]) << 20)
        conn = module.Connection(db)
        conn.execute("CALL checkpoint_threshold=1099511627776")  # checkpoints only where timed
        for statement in DDL:
            conn.execute(statement)

        def run(query: str, rows: list[dict[str, Any]]) -> int:
            """Rows the statements wrote, where they count them: a shape that matched nothing times nothing."""
            written = 0
            for start in range(0, len(rows), FILL_BATCH):
                result = conn.execute(query, {"rows": rows[start : start + FILL_BATCH]})
                if "count(*)" in query:
                    written += int(result.get_next()[0])
            return written

        t0 = time.perf_counter()
        run("UNWIND $rows AS r CREATE (:Entity {id: r.id, name: r.id})", [{"id": f"e{i}"} for i in range(entities)])
        passages = relations // 2
        run("UNWIND $rows AS r CREATE (:Chunk {id: r.id})", [{"id": passage_id(i)} for i in range(passages)])
        fact = "x" * int(args["fact_chars"])
        known: list[dict[str, Any]] = []
        for start in range(0, relations, FILL_BATCH):
            batch = []
            for i in range(start, min(start + FILL_BATCH, relations)):
                n = max(1, round(rng.expovariate(1 / float(args["sources"]))))
                src = " ".join(passage_id(rng.randrange(passages)) for _ in range(n))
                s, d = f"e{rng.randrange(entities)}", f"e{rng.randrange(entities)}"
                batch.append({"s": s, "d": d, "id": f"r{i}", "fact": fact, "src": src})
                known.append({"s": s, "d": d, "id": f"r{i}"})
            run(NEW_RELATIONS, batch)
            conn.execute("CHECKPOINT")
        filled = time.perf_counter() - t0

        trials: list[dict[str, Any]] = []
        for round_ in range(int(args["rounds"])):
            new = [passage_id(passages + round_ * rows_per + i) for i in range(rows_per)]
            run("UNWIND $rows AS r CREATE (:Chunk {id: r.id})", [{"id": c} for c in new])
            conn.execute("CHECKPOINT")
            picked = [rng.choice(known) for _ in range(rows_per)]
            rows = {
                "append_sources": [{**r, "src": rng.choice(new)} for r in picked],
                "new_relations": [
                    {
                        "s": f"e{rng.randrange(entities)}",
                        "d": f"e{rng.randrange(entities)}",
                        "id": f"n{round_}-{i}",
                        "fact": fact,
                        "src": rng.choice(new),
                    }
                    for i in range(rows_per)
                ],
                "new_mentions": [{"e": f"e{rng.randrange(entities)}", "c": rng.choice(new)} for _ in range(rows_per)],
                "confidence_only": picked,
            }
            queries = {
                "append_sources": APPEND,
                "new_relations": NEW_RELATIONS,
                "new_mentions": NEW_MENTIONS,
                "confidence_only": CONFIDENCE,
            }
            for shape in SHAPES:
                conn.execute("BEGIN TRANSACTION")
                t1 = time.perf_counter()
                written = run(queries[shape], rows[shape])
                t2 = time.perf_counter()
                conn.execute("COMMIT")
                t3 = time.perf_counter()
                conn.execute("CHECKPOINT")
                t4 = time.perf_counter()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--engines", default="kuzu", help="comma-separated: kuzu, ladybug")
    parser.add_argument("--entities", type=int, default=144_000, help="a 100k-passage ingest made 144,011")
    parser.add_argument("--relations", type=int, default=225_000, help="a 100k-passage ingest made 224,842")
    parser.add_argument("--sources", type=float, default=10.5, help="passages a relation (mean), as at 100k")
    parser.add_argument("--fact-chars", type=int, default=239, help="a fact's length (mean), as at 100k")
    parser.add_argument("--rows", type=int, default=20_000, help="rows each shape writes a round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pool-mb", type=int, default=4096)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = {
        k: getattr(args, k) for k in ("entities", "relations", "sources", "fact_chars", "rows", "rounds", "pool_mb")
    }
    if args.phase == "engine":
        print(json.dumps(phase_engine(args.engine, settings)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"settings": settings, "engines": {}, "skipped": {}}
    summaries: dict[str, dict[str, Any]] = {}
    for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
        argv = [__file__, "--phase", "engine", "--engine", engine, "--out", str(args.out)]
        argv += [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
        child = run_child(argv, env=dict(os.environ))
        if not child.ok:
            lines = [line for line in child.error.strip().splitlines() if line and not line.startswith("[child")]
            report["skipped"][engine] = lines[-1] if lines else child.error.strip() or "failed"
            print(f"{engine}: skipped ({report['skipped'][engine]})", file=sys.stderr)
            continue
        summaries[engine] = summarise(child.data)
        report["engines"][engine] = {**child.data, **summaries[engine]}
    if summaries:
        first = next(iter(summaries.values()))
        for engine, summary in summaries.items():
            summary["vs_first_engine"] = {
                shape: ratio(summary["checkpoint_s"][shape], first["checkpoint_s"][shape]) for shape in SHAPES
            }
            report["engines"][engine]["vs_first_engine"] = summary["vs_first_engine"]
    (args.out / "engine-checkpoint.json").write_text(json.dumps(report, indent=2))
    plot(args.out, summaries)
    for engine, summary in summaries.items():
        cells = ", ".join(f"{s} {summary['checkpoint_s'][s]:.2f} s" for s in SHAPES)
        print(f"{engine}: checkpoint medians: {cells}")


if __name__ == "__main__":
    main()
