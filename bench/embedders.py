"""The torch-free MiniLM runtimes against sentence-transformers on torch, on the same passages.

Systems: `st` (SentenceTransformerEmbedder, all-MiniLM-L6-v2 on CPU torch: the baseline),
`numpy` and `onnx` (MiniLMEmbedder's two runtimes over the weights evigraph ships). Texts are
1,000 bench passages, 334 per dev set (title + "\\n" + text, the first of each corpus.jsonl,
the same set tests/providers/test_minilm_embedder.py compares). They are cut into --chunks
slices, and every (slice, system) pair runs in a fresh process, systems rotating order per
slice, so a machine whose load changes over the run slows every system alike. Each child
reports the seconds to its first vector (imports and model load: the cold start), the seconds
to embed its slice (model loaded) and its peak RSS. Throughput is passages over the summed embed
seconds; ratios are against `st` in this run; cosines compare each text's vector with `st`'s.
The ONNX model is derived into the user cache before the timed children (its one-off build time
is reported apart). Prints a table, writes DIR/embedders.json and DIR/embedders.png.

    python bench/embedders.py --out bench/out [--data ../shared/bench] [--chunks 4] [--passages 1000]
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # a child's cold start counts from here, before any heavy import

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from _common import peak_rss_mb, pyplot, require_bench_files, run_child  # noqa: E402

SYSTEMS = ("st", "numpy", "onnx")
SETS = ("musique", "2wikimultihopqa", "hotpotqa")
BASELINE = "st"


def load_passages(data: Path, count: int) -> list[str]:
    require_bench_files(*(data / name / "corpus.jsonl" for name in SETS))
    texts: list[str] = []
    for name in SETS:
        with (data / name / "corpus.jsonl").open(encoding="utf-8") as handle:
            for i, line in enumerate(handle):
                if i >= count // len(SETS) + 1:
                    break
                row = json.loads(line)
                texts.append(f"{row['title']}\n{row['text']}")
    return texts[:count]


def _embedder(system: str) -> Any:
    if system == "st":
        from evigraph.providers.embedders import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    from evigraph.providers.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder(runtime="onnx" if system == "onnx" else "numpy")


def child(system: str, texts_path: Path, vectors_path: Path) -> dict[str, Any]:
    import numpy as np

    embedder = _embedder(system)
    embedder.embed(["Who leads ReefWatch?"])
    first = time.perf_counter() - _T0
    texts = json.loads(texts_path.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    vectors = embedder.embed_array(texts)
    seconds = time.perf_counter() - t0
    np.save(vectors_path, vectors)
    return {"first_vector_s": first, "embed_s": seconds, "peak_rss_mb": peak_rss_mb()}


def prepare_onnx() -> dict[str, Any]:
    """Derive the ONNX model into the user cache (if it is not there yet), timed."""
    from evigraph.providers.embedders.minilm import MiniLMEmbedder

    t0 = time.perf_counter()
    model = MiniLMEmbedder(runtime="onnx")._model()
    return {"seconds": time.perf_counter() - t0, "built": bool(model.encoder.rebuilt)}


def run(texts: list[str], chunks: int, tmp: Path, systems_run: tuple[str, ...]) -> dict[str, Any]:
    import numpy as np

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    prepared = run_child([__file__, "--prepare"], env=env)
    if not prepared.ok:
        raise SystemExit(f"the ONNX model could not be built:\n{prepared.error}")
    size = -(-len(texts) // chunks)
    slices = [texts[i : i + size] for i in range(0, len(texts), size)]
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in systems_run}
    vectors: dict[str, list[Any]] = {s: [] for s in systems_run}
    for k, part in enumerate(slices):
        source = tmp / f"texts{k}.json"
        source.write_text(json.dumps(part), encoding="utf-8")
        order = systems_run[k % len(systems_run) :] + systems_run[: k % len(systems_run)]
        for system in order:
            out = tmp / f"{system}{k}.npy"
            argv = [__file__, "--child", system, "--texts", str(source), "--vectors", str(out)]
            outcome = run_child(argv, env=env)
            if not outcome.ok:
                raise SystemExit(f"{system} failed on slice {k}:\n{outcome.error}")
            runs[system].append(outcome.data)
            vectors[system].append(np.load(out))
            speed = len(part) / outcome.data["embed_s"]
            print(f"  slice {k + 1}/{len(slices)} {system:6} {speed:7.1f} passages/s", flush=True)
    reference = np.vstack(vectors[BASELINE])
    systems: dict[str, Any] = {}
    for system in systems_run:
        mine = np.vstack(vectors[system])
        cos = (mine * reference).sum(axis=1) / (np.linalg.norm(mine, axis=1) * np.linalg.norm(reference, axis=1))
        seconds = sum(r["embed_s"] for r in runs[system])
        systems[system] = {
            "passages_per_s": len(texts) / seconds,
            "embed_s": seconds,
            "first_vector_s_median": statistics.median(r["first_vector_s"] for r in runs[system]),
            "first_vector_s": [r["first_vector_s"] for r in runs[system]],
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs[system]),
            "cosine_vs_st_min": float(cos.min()),
            "cosine_vs_st_mean": float(cos.mean()),
            "slice_passages_per_s": [len(p) / r["embed_s"] for p, r in zip(slices, runs[system], strict=True)],
        }
    base = systems[BASELINE]
    for r in systems.values():
        r["speed_vs_st"] = r["passages_per_s"] / base["passages_per_s"]
        r["first_vector_vs_st"] = r["first_vector_s_median"] / base["first_vector_s_median"]
        r["peak_rss_vs_st"] = r["peak_rss_mb"] / base["peak_rss_mb"]
    return {"passages": len(texts), "chunks": len(slices), "onnx_build": prepared.data, "systems": systems}


def report(results: dict[str, Any]) -> None:
    print(f"{results['passages']} passages in {results['chunks']} interleaved slices; ratios vs st (same run)")
    head = f"{'system':7} {'pass/s':>7} {'x st':>5} {'first vec s':>11} {'x st':>5} {'peak MB':>8} {'x st':>5}"
    print(head + f" {'cos min':>8} {'cos mean':>9}")
    for name, r in results["systems"].items():
        print(
            f"{name:7} {r['passages_per_s']:7.1f} {r['speed_vs_st']:5.2f} {r['first_vector_s_median']:11.2f}"
            f" {r['first_vector_vs_st']:5.2f} {r['peak_rss_mb']:8.0f} {r['peak_rss_vs_st']:5.2f}"
            f" {r['cosine_vs_st_min']:8.5f} {r['cosine_vs_st_mean']:9.6f}"
        )
    build = results["onnx_build"]
    print(f"onnx model {'built' if build['built'] else 'already cached'} in {build['seconds']:.1f} s before the run")


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(results["systems"])
    rows = [results["systems"][n] for n in names]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, key, label in (
        (axes[0], "passages_per_s", "passages/s (higher is better)"),
        (axes[1], "first_vector_s_median", "cold: s to first vector"),
        (axes[2], "peak_rss_mb", "peak RSS (MB)"),
    ):
        bars = ax.bar(names, [r[key] for r in rows], color=["#888", "#4a7", "#37c"][: len(names)])
        ax.bar_label(bars, labels=[f"{r[key]:.2f}" if r[key] < 10 else f"{r[key]:.0f}" for r in rows])
        ax.set_title(label)
    fig.suptitle(f"all-MiniLM-L6-v2 on {results['passages']} bench passages (st = sentence-transformers on torch)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"))
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of st,numpy,onnx")
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        print(json.dumps(prepare_onnx()))
        return
    if args.child:
        print(json.dumps(child(args.child, args.texts, args.vectors)))
        return
    texts = load_passages(args.data, args.passages)
    with tempfile.TemporaryDirectory() as tmp:
        systems = tuple(s for s in SYSTEMS if s in args.systems.split(","))
        if BASELINE not in systems:
            raise SystemExit("--systems must include st, the baseline")
        results = run(texts, max(1, args.chunks), Path(tmp), systems)
    report(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embedders.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    plot(results, args.out / "embedders.png")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
