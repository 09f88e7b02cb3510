"""Where graph ranking gets a question's names: the stored-name finder against the extractor.

Graph ranking seeds its walk with the entities a question names (`retrieval/question_names.py`).
evigraph finds them from the knowledge base's own entity names and the shapes of names; before, it
ran the knowledge base's extractor (spaCy's NER) on the question. This runs both on the same
knowledge bases in one process, so the only difference is the names:

  extractor  the default extractor on the question (spaCy when installed), each name with its span
  stored     `question_names`, what evigraph runs

Per dataset (a sub-folder of --data with corpus.jsonl and questions.jsonl), the corpus is ingested
once with --embedder into DB-DIR/<dataset>-<embedder>.db (reused when it exists; bench/coldstart.py
builds the same files). Reported per finder: recall@5 (as bench/retrieval.py counts it), the
milliseconds finding a question's names took (warm, median), and the names of the first questions.
Writes DIR/question_names.json and DIR/question_names.png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import pyplot, require_dataset

TOP_K = 5
FINDERS = ("extractor", "stored")


def extractor_finder(kb: Any) -> Callable[..., list[Any]]:
    """The question's names as the knowledge base's extractor finds them in a passage."""
    from evigraph.models import TextChunk
    from evigraph.retrieval.question_names import NamedSpan

    extractor = kb._extraction().offline  # the bench compares against the extractor, private on purpose

    def find(question: str, *_: Any) -> list[NamedSpan]:
        chunk = TextChunk(index=0, text=question, start=0, end=len(question))
        graph = extractor.extract_sync([[chunk]], kb.ontology)[0]
        where = {m.entity_id: m.spans[0] for m in graph.mentions if m.spans}
        found: dict[str, NamedSpan] = {}
        for entity in graph.entities:
            span = where.get(entity.id)
            if span is not None and 0 <= span.start < span.end <= len(question):
                found.setdefault(entity.name, NamedSpan(entity.name, span.start, span.end))
        return list(found.values())

    return find


async def measure(db: Path, questions: list[dict[str, Any]]) -> dict[str, Any]:
    import evigraph.retrieval.graph_stage as stage_module
    from evigraph import KnowledgeBase
    from evigraph.retrieval.question_names import question_names

    out: dict[str, Any] = {}
    async with KnowledgeBase(db) as kb:
        for finder in FINDERS:
            find = question_names if finder == "stored" else extractor_finder(kb)
            stage_module.question_names = find  # type: ignore[assignment]  # what GraphStage.plan calls
            kb._graph_stage = None  # a fresh stage per finder; the snapshot is read from the saved index
            recalls, seconds, names = [], [], []
            for q in questions:
                result = await kb.retrieve(q["question"], top_k=TOP_K)
                docs = list(dict.fromkeys(p.source.document_key for p in result.passages))
                gold = set(q["supporting_ids"])
                recalls.append(len(set(docs[:TOP_K]) & gold) / len(gold))
                snap = await kb.graph_stage().index.snapshot(kb.store)
                start = time.perf_counter()
                usable = snap.entity_usable
                found = find(q["question"], snap.node_of, lambda n, usable=usable: bool(usable[n]), kb.ontology)
                seconds.append(time.perf_counter() - start)
                names.append([n.name for n in found])
            out[finder] = {
                f"recall@{TOP_K}": round(100 * sum(recalls) / len(recalls), 2),
                "names_ms_p50": round(1000 * statistics.median(seconds), 3),
                "questions_with_names": sum(1 for n in names if n),
                "first_names": names[:10],
            }
        stage_module.question_names = question_names  # type: ignore[assignment]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"))
    parser.add_argument("--datasets", default="musique,2wikimultihopqa,hotpotqa")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--db-dir", type=Path, default=Path("bench-results/dbs"))
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.db_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"embedder": args.embedder, "datasets": {}}
    for dataset in args.datasets.split(","):
        data = args.data / dataset
        db = args.db_dir / f"{dataset}-{args.embedder}.db"
        require_dataset(data, db)
        if not db.exists():
            argv = [sys.executable, "-m", "evigraph", "ingest", str(data / "corpus.jsonl"), "--db", str(db)]
            subprocess.run([*argv, "--embedder", args.embedder, "--quiet"], check=True)
        questions = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line]
        found = asyncio.run(measure(db, questions))
        base = found["extractor"][f"recall@{TOP_K}"]
        found["stored_minus_extractor"] = round(found["stored"][f"recall@{TOP_K}"] - base, 2)
        report["datasets"][dataset] = found
        print(
            f"{dataset}: recall@{TOP_K} extractor {base}, stored {found['stored'][f'recall@{TOP_K}']} "
            f"({found['stored_minus_extractor']:+}); names p50 {found['extractor']['names_ms_p50']} ms vs "
            f"{found['stored']['names_ms_p50']} ms",
            flush=True,
        )
    (args.out / "question_names.json").write_text(json.dumps(report, indent=2))
    plot(report, args.out / "question_names.png")
    print(f"wrote {args.out / 'question_names.json'}")


def plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    datasets = list(report["datasets"])
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for i, finder in enumerate(FINDERS):
        values = [report["datasets"][d][finder][f"recall@{TOP_K}"] for d in datasets]
        ax.bar([x + (i - 0.5) * width for x in range(len(datasets))], values, width, label=finder)
    ax.set_xticks(range(len(datasets)), datasets)
    ax.set_ylabel(f"recall@{TOP_K} (%)")
    ax.set_title(f"graph ranking's question names ({report['embedder']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
