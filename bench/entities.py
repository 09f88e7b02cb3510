"""Entities on real technical docs: label accuracy, noise and the real entities kept, against a
labelled set, evigraph's offline extraction beside spaCy's own labels in the same run.

    python bench/entities.py --out bench/out
    python bench/entities.py --set bench/data/entities --extractor rules --out bench/out

The labelled set (bench/data/entities: the docs of several open-source projects, copied with their
source, and labels.jsonl: one line per name a reader or an extractor found, with its default
ontology label or "noise") is described in its README. For each project, separately:

- **evigraph**: the project's docs are ingested into a fresh knowledge base as a user would
  (`KnowledgeBase(db, extractor=..., embedder="none")`, the default chunker), and its entities read
  back: a name, its aliases and its label.
- **evigraph-own-labels**: the same ingest under an ontology of the user's own words (`OWN_LABELS`:
  every label renamed, "Contributor" for Person, "Backer" for Organization..., and described in
  other words), its labels read back through that renaming: typing must find a user's labels by
  their descriptions, as well as it finds the default ones by name.
- **spaCy** (the baseline): the same passages through spaCy's small English model's NER, each span
  typed by its NER tag through evigraph's tag-to-label map, numbers and amounts dropped as evigraph
  always has, nothing else filtered; a name's label is its tags' most frequent.

Names are matched by `normalize_name` (case, spaces, a leading article). Per system:

- `label_accuracy`: of the labelled real entities the system kept, the share with the right label;
- `noise_share`: of the system's entities that are labelled, the share labelled noise (entities
  the set does not label are counted in `unlabelled` and left out: the set labels every name the
  extractors of its making found, so later extractors' new names are few);
- `kept_share`: of the labelled real entities, the share the system has at all (any label).

Writes DIR/entities.json (figures, per project and over all, and each system's errors) and
DIR/entities.png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pyplot

NOISE = "noise"
SYSTEMS = ("evigraph", "evigraph-own-labels", "spacy")


def load_labels(root: Path) -> dict[str, dict[str, str]]:
    """Project -> normalised name -> label (the first line of a name wins)."""
    from evigraph.models import normalize_name

    out: dict[str, dict[str, str]] = {}
    for line in (root / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(row["project"], {}).setdefault(normalize_name(row["name"]), row["label"])
    return out


OWN_LABELS: dict[str, tuple[str, str]] = {
    "Person": ("Contributor", "Someone who writes, maintains or sponsors the software or its docs."),
    "Organization": ("Backer", "A company, foundation or team behind or funding the work."),
    "Technology": ("Stack", "A library, framework, protocol, format or tool developers use."),
    "Product": ("Offering", "A hosted service, app or device offered to users."),
    "Location": ("Whereabouts", "A country, city or region."),
    "Date": ("When", "A calendar date, month or year."),
    "Event": ("Gathering", "A conference, meeting or release event."),
    "Concept": ("Idea", "An abstract notion, field or theory."),
    "Law": ("Rulebook", "A licence, regulation or formal standard."),
    "Dataset": ("Corpus", "A benchmark or collection of data."),
    "Method": ("Recipe", "A named procedure, algorithm or technique."),
}
"""Default label -> the user's own label and description for it (evigraph-own-labels)."""


async def evigraph_entities(docs: Path, extractor: str, own: bool = False) -> tuple[dict[str, str], list[str]]:
    """Normalised name (and alias) -> label of what an ingest of `docs` stores; the passages' texts.
    With `own`, the ingest uses `OWN_LABELS` and labels are given back as the default ones."""
    from evigraph import KnowledgeBase
    from evigraph.models import EntityType, Ontology, normalize_name

    kwargs: dict[str, Any] = {}
    back: dict[str, str] = {}
    if own:
        own_types = tuple(EntityType(label=n, description=d) for n, d in OWN_LABELS.values())
        kwargs["ontology"] = Ontology(entities=own_types)
        back = {n: label for label, (n, _) in OWN_LABELS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        async with KnowledgeBase(Path(tmp) / "kb.db", extractor=extractor, embedder="none", **kwargs) as kb:
            await kb.ingest(docs)
            store = kb.store
            assert store is not None
            records = await store.entity_records()
            texts = [
                p.text for d in await store.list_documents(limit=10_000) for p in await store.document_passages(d.key)
            ]
    found: dict[str, str] = {}
    for r in records:
        for name in (r.name, *r.aliases):
            found.setdefault(normalize_name(name), back.get(r.label, r.label))
    return found, texts


def spacy_entities(texts: list[str]) -> dict[str, str]:
    """Normalised name -> spaCy's most frequent label for it, mapped onto the default ontology."""
    from evigraph.ingest.extraction.labels import keep_tag
    from evigraph.ingest.extraction.spacy_ner import load_model
    from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
    from evigraph.models import normalize_name

    nlp = load_model()  # the installed small English model; its NER is that of the full pipeline
    votes: dict[str, Counter[str]] = {}
    for doc in nlp.pipe(texts, batch_size=64):
        for ent in doc.ents:
            label = keep_tag(ent.label_, DEFAULT_ONTOLOGY)
            name = normalize_name(ent.text)
            if label is not None and name:
                votes.setdefault(name, Counter())[label] += 1
    return {name: max(sorted(c.items()), key=lambda kv: kv[1])[0] for name, c in votes.items()}


def score(found: dict[str, str], gold: dict[str, str]) -> dict[str, Any]:
    real = {n: label for n, label in gold.items() if label != NOISE}
    kept = {n: found[n] for n in real if n in found}
    right = [n for n in kept if kept[n] == real[n]]
    judged = [n for n in found if n in gold]
    noise = [n for n in judged if gold[n] == NOISE]
    confusion = Counter(f"{real[n]} -> {kept[n]}" for n in kept if kept[n] != real[n])
    wrong = {n: f"{real[n]} -> {kept[n]}" for n in sorted(kept) if kept[n] != real[n]}
    return {
        "labelled_real": len(real),
        "kept": len(kept),
        "kept_share": round(len(kept) / max(len(real), 1), 4),
        "label_accuracy": round(len(right) / max(len(kept), 1), 4),
        "extracted": len(found),
        "judged": len(judged),
        "unlabelled": len(found) - len(judged),
        "noise": len(noise),
        "noise_share": round(len(noise) / max(len(judged), 1), 4),
        "confusions": dict(confusion.most_common(12)),
        "mislabelled": wrong,
        "noise_kept": sorted(noise),
        "real_missed": sorted(n for n in real if n not in found),
        "unlabelled_names": sorted(n for n in found if n not in gold),
    }


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    kept = sum(p["kept"] for p in parts)
    right = sum(round(p["label_accuracy"] * p["kept"]) for p in parts)
    judged = sum(p["judged"] for p in parts)
    real = sum(p["labelled_real"] for p in parts)
    return {
        "labelled_real": real,
        "kept": kept,
        "kept_share": round(kept / max(real, 1), 4),
        "label_accuracy": round(right / max(kept, 1), 4),
        "judged": judged,
        "noise": sum(p["noise"] for p in parts),
        "noise_share": round(sum(p["noise"] for p in parts) / max(judged, 1), 4),
        "extracted": sum(p["extracted"] for p in parts),
    }


def plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    systems = list(report["overall"])
    metrics = ["label_accuracy", "noise_share", "kept_share"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(systems)
    for i, system in enumerate(systems):
        values = [report["overall"][system][m] * 100 for m in metrics]
        ax.bar([m + i * width for m in range(len(metrics))], values, width, label=system)
    ax.set_xticks([m + width * (len(systems) - 1) / 2 for m in range(len(metrics))], metrics)
    ax.axhline(85, color="grey", lw=0.5, ls="--")
    ax.set_ylabel("%")
    ax.set_title("Entities on real technical docs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=Path("bench/data/entities"), help="the labelled set")
    parser.add_argument("--extractor", default="spacy", help="evigraph's extractor (spacy, rules)")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    labels = load_labels(args.set)
    report: dict[str, Any] = {"extractor": args.extractor, "projects": {}, "overall": {}}
    for project, gold in sorted(labels.items()):
        found, texts = await evigraph_entities(args.set / "docs" / project, args.extractor)
        own, _ = await evigraph_entities(args.set / "docs" / project, args.extractor, own=True)
        report["projects"][project] = {
            "evigraph": score(found, gold),
            "evigraph-own-labels": score(own, gold),
            "spacy": score(spacy_entities(texts), gold),
        }
    for system in SYSTEMS:
        report["overall"][system] = pooled([p[system] for p in report["projects"].values()])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "entities.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    plot(report, args.out / "entities.png")
    print(f"{'system':<20} {'accuracy':>9} {'noise':>7} {'kept':>7} {'extracted':>10}")
    for system, o in report["overall"].items():
        print(
            f"{system:<20} {o['label_accuracy']:>9.1%} {o['noise_share']:>7.1%} {o['kept_share']:>7.1%} "
            f"{o['extracted']:>10}"
        )
    base = report["overall"]["spacy"]
    ours = report["overall"]["evigraph"]
    print(
        f"against spaCy: accuracy x{ours['label_accuracy'] / max(base['label_accuracy'], 1e-9):.2f}, "
        f"noise x{ours['noise_share'] / max(base['noise_share'], 1e-9):.2f}, "
        f"kept x{ours['kept_share'] / max(base['kept_share'], 1e-9):.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
