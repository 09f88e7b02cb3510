"""The retrieval bench's report: the table it prints and the recall@k curves it draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _common import pyplot

FLOOR = "floor"  # the timing-only system: question embedding with MiniLM + one matrix product
CURVE_K = 10  # recall@k is reported for k = 1..CURVE_K


def print_table(results: dict[str, dict[str, dict[str, Any]]]) -> None:
    print()
    print("recall in % (gold passages in the top k distinct passages); latency per question in ms, all systems")
    print("of a dataset timed in one process, interleaved per question; x floor / x dense = p50 ratios;")
    print("worse = questions below dense's recall@5; work x = ingest embedding work timed alone / passages once;")
    print("weak / no-ans = % flagged weak_match on answerable questions / on questions whose gold passages are gone")
    header = (
        f"{'dataset':<16} {'system':<22} {'R@1':>5} {'R@2':>5} {'R@5':>5} {'R@10':>5} {'worse':>5} {'p50':>8} "
        f"{'p95':>8} {'x floor':>7} {'x dense':>7} {'ingest s':>8} {'pass/s':>7} {'emb/pass':>8} {'emb s':>7} "
        f"{'work x':>6} {'peak MB':>7} {'weak':>5} {'no-ans':>6}"
    )
    print(header)
    print("-" * len(header))
    for dataset, systems in results.items():
        for system, r in systems.items():
            if system == FLOOR:
                print(f"{dataset:<16} {system:<22} {'':>29} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f}")
                continue
            print(
                f"{dataset:<16} {system:<22} {r['recall@1']:>5.1f} {r['recall@2']:>5.1f} {r['recall@5']:>5.1f} "
                f"{r['recall@10']:>5.1f} {_fmt(r['worse_than_dense'], 5, 0)} {_fmt(r['p50_ms'])} "
                f"{_fmt(r['p95_ms'])} {_fmt(r['p50_vs_floor'], 7)} {_fmt(r['p50_vs_dense'], 7)} "
                f"{_fmt(r['ingest_seconds'], 8, 1)} {_fmt(r['ingest_per_s'], 7, 1)} "
                f"{_fmt(r['embeddings_per_passage'])} {_fmt(r['embed_seconds'], 7, 1)} "
                f"{_fmt(r.get('embed_work_vs_passages'), 6)} "
                f"{r['peak_rss_mb']:>7.0f} {_fmt(r.get('weak_match_answerable'), 5, 1)} "
                f"{_fmt(r.get('weak_match_no_answer'), 6, 1)}"
            )


def _fmt(v: float | None, width: int = 8, digits: int = 2) -> str:
    return f"{v:>{width}.{digits}f}" if v is not None else f"{'-':>{width}}"


def plot(results: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    """One panel per dataset, one recall@k curve (k = 1..10) per system."""
    plt = pyplot()
    datasets = [d for d, systems in results.items() if any(s != FLOOR for s in systems)]
    if plt is None or not datasets:
        return
    ks = list(range(1, CURVE_K + 1))
    fig, axes = plt.subplots(1, len(datasets), figsize=(max(7.0, 4.6 * len(datasets)), 4.2), sharey=True, squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        for system, r in results[dataset].items():
            if system != FLOOR:
                ax.plot(ks, [r[f"recall@{k}"] for k in ks], marker="o", markersize=3, label=system)
        ax.set_title(dataset)
        ax.set_xlabel("k (distinct passages)")
        ax.set_xticks(ks)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("passage recall@k, %")
    axes[0][-1].legend(loc="lower right", fontsize=8)
    fig.suptitle("multi-hop passage recall@k: evigraph vs BM25 and dense MiniLM")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
