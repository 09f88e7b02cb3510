"""Resolution at finalize: what blocking costs beside comparing all pairs, and where the fuzzy
threshold cuts between spelling variants and distinct names.

The names are the distinct titles of the bench corpora (parenthesised qualifiers dropped):
Wikipedia articles, so two distinct titles are two distinct things. Spelling variants are made
from a fixed sample of them: one typo (a letter changed, dropped or two swapped, past the first
letter, in a word of five letters or more) and the first name cut to its initial ("J. Smith")
for two- and three-word names. Blocking runs once over titles and variants together; the
baseline is the all-pairs comparison (entities²/2 pairs), timed on a sample of pairs and scaled.
For each threshold the table gives the pairs of distinct titles at or above it (false merges)
and the share of variants at or above it (merges found).

    python bench/resolution.py --data ../shared/bench --out bench/out
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import pyplot, require_bench_files

DATASETS = ("musique", "hotpotqa", "2wikimultihopqa")
THRESHOLDS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
SAMPLE = 1500
SEED = 7


def titles(data: Path) -> list[str]:
    found: set[str] = set()
    for name in DATASETS:
        for line in (data / name / "corpus.jsonl").open(encoding="utf-8"):
            title = re.sub(r"\s*\(.*?\)\s*$", "", json.loads(line)["title"]).strip()
            if title:
                found.add(title)
    return sorted(found)


def typo(title: str, rng: random.Random) -> str | None:
    words = title.split()
    long_words = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long_words:
        return None
    i = rng.choice(long_words)
    w = words[i]
    p = rng.randrange(1, len(w) - 1)
    op = rng.choice("sdt")
    if op == "s":
        w = w[:p] + rng.choice("aeiourstln".replace(w[p].lower(), "")) + w[p + 1 :]
    elif op == "d":
        w = w[:p] + w[p + 1 :]
    else:
        w = w[:p] + w[p + 1] + w[p] + w[p + 2 :]
    words[i] = w
    return " ".join(words)


def initial(title: str, rng: random.Random) -> str | None:
    words = title.split()
    if not 2 <= len(words) <= 3 or not all(w[:1].isupper() and w.isalpha() for w in words) or words[0] in ("The", "A"):
        return None
    return f"{words[0][0]}. {' '.join(words[1:])}"


def measure(data: Path) -> dict[str, Any]:
    from evigraph.ingest.candidates import Blocks
    from evigraph.ingest.graph_resolution.fuzzy import FUZZY_THRESHOLD
    from evigraph.ingest.name_match import best_match, comparison_form, names_of
    from evigraph.store.merging import EntityRecord

    names = titles(data)
    rng = random.Random(SEED)
    entities = [EntityRecord(f"t:{i}", t, "Unknown") for i, t in enumerate(names)]
    index = {t: i for i, t in enumerate(names)}
    truth: dict[tuple[str, str], str] = {}
    for kind, make in (("typo", typo), ("initial", initial)):
        for title in rng.sample(names, SAMPLE):
            variant = make(title, rng)
            if variant and variant not in index:
                entity = EntityRecord(f"v:{len(entities)}", variant, "Unknown")
                entities.append(entity)
                truth[tuple(sorted((f"t:{index[title]}", entity.id)))] = kind  # type: ignore[index]
    t0 = time.perf_counter()
    found = Blocks(entities).pairs(floor=0.0)
    blocking_s = time.perf_counter() - t0
    every = len(entities) * (len(entities) - 1) // 2
    sample = [(rng.randrange(len(entities)), rng.randrange(len(entities))) for _ in range(20_000)]
    forms = [names_of(e.name, e.aliases) for e in entities]
    t0 = time.perf_counter()
    for i, j in sample:
        best_match(forms[i], forms[j])
    all_pairs_s = (time.perf_counter() - t0) / len(sample) * every
    by_id = {e.id: e for e in entities}
    distinct = [
        p
        for p in found.pairs
        if p.a.startswith("t:")
        and p.b.startswith("t:")
        and comparison_form(by_id[p.a].name) != comparison_form(by_id[p.b].name)
    ]
    scored = {(p.a, p.b): p.score for p in found.pairs}
    rows = []
    for threshold in THRESHOLDS:
        false = sum(1 for p in distinct if p.score >= threshold)
        recall = {
            kind: sum(1 for pair, k in truth.items() if k == kind and scored.get(pair, 0.0) >= threshold)
            / max(1, sum(1 for k in truth.values() if k == kind))
            for kind in ("typo", "initial")
        }
        rows.append(
            {"threshold": threshold, "false_pairs": false, "false_rate": false / max(1, len(distinct)), **recall}
        )
    return {
        "entities": len(entities),
        "titles": len(names),
        "variants": dict(sorted((k, sum(1 for v in truth.values() if v == k)) for k in ("typo", "initial"))),
        "all_pairs": every,
        "all_pairs_seconds_estimated": round(all_pairs_s, 1),
        "compared": found.compared,
        "blocking_seconds": round(blocking_s, 2),
        "distinct_pairs_proposed": len(distinct),
        "variants_proposed": sum(1 for pair in truth if pair in scored) / max(1, len(truth)),
        "fuzzy_threshold": FUZZY_THRESHOLD,
        "thresholds": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"))
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    require_bench_files(*(args.data / name / "corpus.jsonl" for name in DATASETS))
    result = measure(args.data)
    print(
        f"{result['entities']:,} names ({result['titles']:,} titles, variants {result['variants']}): blocking "
        f"compared {result['compared']:,} pairs in {result['blocking_seconds']} s; all pairs: "
        f"{result['all_pairs']:,} pairs, about {result['all_pairs_seconds_estimated']} s (baseline, same run)"
    )
    print(
        f"variants blocking proposed: {result['variants_proposed']:.1%}; "
        f"distinct pairs: {result['distinct_pairs_proposed']:,}"
    )
    print(f"{'threshold':>9} {'false pairs':>11} {'false %':>8} {'typo %':>7} {'initial %':>9}")
    for row in result["thresholds"]:
        mark = "  <- FUZZY_THRESHOLD" if row["threshold"] == result["fuzzy_threshold"] else ""
        print(
            f"{row['threshold']:>9.2f} {row['false_pairs']:>11,} {row['false_rate'] * 100:>8.3f} "
            f"{row['typo'] * 100:>7.1f} {row['initial'] * 100:>9.1f}{mark}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "resolution.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [r["threshold"] for r in result["thresholds"]]
        ax.plot(xs, [r["typo"] * 100 for r in result["thresholds"]], marker="o", label="typo variants merged %")
        ax.plot(xs, [r["initial"] * 100 for r in result["thresholds"]], marker="o", label="initial variants merged %")
        ax2 = ax.twinx()
        ax2.plot(xs, [r["false_rate"] * 100 for r in result["thresholds"]], color="red", marker="x", label="false %")
        ax.axvline(result["fuzzy_threshold"], color="grey", linestyle="--")
        ax.set_xlabel("name similarity threshold")
        ax.set_ylabel("variants merged (%)")
        ax2.set_ylabel("distinct-name pairs merged (%)")
        fig.legend(loc="lower left")
        fig.tight_layout()
        fig.savefig(args.out / "resolution.png", dpi=120)


if __name__ == "__main__":
    main()
