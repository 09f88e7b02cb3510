"""Code ingest: how fast it builds the code graph, and how few tokens a structural answer costs.

Two trees: evigraph's own `src/`, and a larger public Python project read as data from where it
is installed (sympy by default, a dependency of torch in the dev install; `--large` names another
folder). For each, in one process:

- ingest: wall time of `kb.ingest_code` on an empty knowledge base, nodes and edges written per
  second, and a re-ingest of the unchanged tree. The baseline is `ast.parse` of every file, read
  in the same run: the cost of parsing alone, which ingest cannot go below.
- answers: three structural questions (what calls X, what does module Y import, what classes
  inherit from Z), each answered by one Cypher query; its tokens (the query and its rows as JSON)
  against the baseline of reading the files: the tokens of every file a reader would open, those
  whose text holds the name asked about (what `grep -l` lists), the module itself for imports.

Tokens are cl100k BPE. Nothing here asserts a time.

    python bench/code.py --out bench/out
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, pyplot

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Question:
    kind: str
    """calls, imports or inherits."""
    subject: str
    """The qualname (calls, inherits) or the module name (imports) asked about."""
    grep: str
    """What a reader searches the files for."""


TREES: dict[str, list[Question]] = {
    "evigraph": [
        Question("calls", "question_vectors", "question_vectors("),
        Question("imports", "evigraph.retrieval.retriever", ""),
        Question("inherits", "GraphStore", "GraphStore"),
    ],
    "sympy": [
        Question("calls", "sympify", "sympify("),
        Question("imports", "sympy.core.basic", ""),
        Question("inherits", "Boolean", "Boolean"),
    ],
}

QUERIES = {
    "calls": "MATCH (f:Function)-[:CALLS]->(g:Function) WHERE g.qualname = $s RETURN f.module, f.qualname, f.path, "
    "f.line_start",
    "imports": "MATCH (m:Module)-[:IMPORTS]->(x:Module) WHERE m.name = $s RETURN x.name",
    "inherits": "MATCH (c:Class)-[:INHERITS*1..8]->(b:Class) WHERE b.qualname = $s RETURN DISTINCT c.module, "
    "c.qualname, c.path, c.line_start",
}


def python_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.py") if "__pycache__" not in p.parts)


def parse_only(files: list[Path], max_bytes: int) -> float:
    """The baseline: read and `ast.parse` every file ingest would read."""
    t0 = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        if len(data) <= max_bytes:
            with contextlib.suppress(SyntaxError):
                ast.parse(data)
    return time.perf_counter() - t0


async def measure(name: str, tree: Path, questions: list[Question], max_file_kb: int) -> dict[str, Any]:
    from evigraph import KnowledgeBase
    from evigraph.providers.tokenizers import default_tokenizer

    tokens = default_tokenizer()
    files = python_files(tree)
    baseline = parse_only(files, max_file_kb * 1024)
    with tempfile.TemporaryDirectory() as tmp:
        async with KnowledgeBase(Path(tmp) / "kb.db") as kb:
            t0 = time.perf_counter()
            report = await kb.ingest_code([tree], max_file_kb=max_file_kb)
            seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = await kb.ingest_code([tree], max_file_kb=max_file_kb)
            reingest = time.perf_counter() - t0
            assert kb.store is not None
            answers = []
            for q in questions:
                cypher = QUERIES[q.kind]
                rows = await kb.store.cypher_query(cypher, {"s": q.subject}, limit=10_000)
                graph_tokens = tokens.count(cypher) + tokens.count(json.dumps(rows, ensure_ascii=False))
                opened = reader_files(tree, files, q, rows)
                read_tokens = sum(tokens.count(p.read_text("utf-8", "replace")) for p in opened)
                answers.append(
                    {
                        "question": f"{q.kind} {q.subject}",
                        "rows": len(rows),
                        "graph_tokens": graph_tokens,
                        "files_read": len(opened),
                        "read_tokens": read_tokens,
                        "ratio": read_tokens / max(graph_tokens, 1),
                    }
                )
    edges = report.edges_added
    return {
        "tree": name,
        "path": str(tree),
        "files": report.files,
        "parsed": report.parsed,
        "failed": len(report.failed),
        "too_large": len(report.too_large),
        "nodes": report.nodes_added,
        "edges": edges,
        "seconds": seconds,
        "parse_only_seconds": baseline,
        "vs_parse_only": seconds / max(baseline, 1e-9),
        "nodes_per_s": report.nodes_added / seconds,
        "edges_per_s": edges / seconds,
        "reingest_seconds": reingest,
        "reingest_unchanged": again.unchanged,
        "answers": answers,
    }


def reader_files(tree: Path, files: list[Path], q: Question, rows: list[dict[str, Any]]) -> list[Path]:
    """The files a reader opens to answer `q` without the graph: grep hits, or the module itself."""
    if q.kind == "imports":
        rel = q.subject.split(".")
        for path in files:
            parts = list(path.with_suffix("").parts)
            if parts[-len(rel) :] == rel or parts[-len(rel) - 1 :] == [*rel, "__init__"]:
                return [path]
        return []
    return [p for p in files if q.grep in p.read_text("utf-8", "replace")]


def large_tree(given: str | None) -> Path:
    if given:
        return Path(given).resolve()
    import sympy

    return Path(sympy.__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/out")
    parser.add_argument("--large", default=None, help="a larger Python tree (default: the installed sympy)")
    parser.add_argument("--max-file-kb", type=int, default=1024)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    trees = [("evigraph", ROOT / "src", TREES["evigraph"]), ("sympy", large_tree(args.large), TREES["sympy"])]
    results = [asyncio.run(measure(name, tree, qs, args.max_file_kb)) for name, tree, qs in trees]

    print(f"{'tree':9} {'files':>6} {'nodes':>7} {'edges':>7} {'ingest s':>9} {'parse s':>8} {'x parse':>8} "
          f"{'nodes/s':>8} {'edges/s':>8} {'re-ingest s':>11}")  # fmt: skip
    for r in results:
        print(
            f"{r['tree']:9} {r['files']:6} {r['nodes']:7} {r['edges']:7} {r['seconds']:9.2f} "
            f"{r['parse_only_seconds']:8.2f} {r['vs_parse_only']:8.1f} {r['nodes_per_s']:8.0f} {r['edges_per_s']:8.0f} "
            f"{r['reingest_seconds']:11.2f}"
        )
    print(f"\n{'tree':9} {'question':40} {'rows':>5} {'graph tok':>10} {'files':>6} {'read tok':>10} {'x fewer':>8}")
    for r in results:
        for a in r["answers"]:
            print(
                f"{r['tree']:9} {a['question']:40} {a['rows']:5} {a['graph_tokens']:10} {a['files_read']:6} "
                f"{a['read_tokens']:10} {a['ratio']:8.1f}"
            )
    payload = {"peak_rss_mb": peak_rss_mb(), "results": results}
    (out / "code.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    plot(results, out)


def plot(results: list[dict[str, Any]], out: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    names = [r["tree"] for r in results]
    ax[0].bar([f"{n}\ningest" for n in names], [r["seconds"] for r in results], label="ingest_code")
    ax[0].bar([f"{n}\nparse only" for n in names], [r["parse_only_seconds"] for r in results], label="ast.parse")
    ax[0].set_ylabel("seconds")
    ax[0].set_title("ingest time vs parsing alone")
    labels = [f"{r['tree']}: {a['question']}" for r in results for a in r["answers"]]
    graph = [a["graph_tokens"] for r in results for a in r["answers"]]
    read = [a["read_tokens"] for r in results for a in r["answers"]]
    ys = range(len(labels))
    ax[1].barh([y + 0.2 for y in ys], read, height=0.4, label="reading the files")
    ax[1].barh([y - 0.2 for y in ys], graph, height=0.4, label="one Cypher query")
    ax[1].set_yticks(list(ys), labels, fontsize=7)
    ax[1].set_xscale("log")
    ax[1].set_xlabel("tokens (log)")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(out / "code.png")


if __name__ == "__main__":
    main()
