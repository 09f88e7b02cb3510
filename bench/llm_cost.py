"""What LLM extraction costs per passage: calls, input and output tokens, and re-ingest calls.

A bench corpus is ingested with `--extractor llm` against the replay server of the tests (a real
OpenAI-compatible HTTP server on loopback, so the real client, batching, cache and accounting
run). Its model is a deterministic stand-in that answers from the prompt (the tagger's
candidates confirmed, other capitalised names added, neighbours related), and its usage block
counts tokens with the same BPE tokenizer as `estimate_usage`, the JSON schema included, as a
server with structured output counts them. Output tokens depend on that stand-in, so they show
the answer's format (numbers for confirmed names, one-letter keys), not a real model's verbosity;
input tokens are what a real model would be sent.

Measured in the same run: the default (several passages per call) against one passage per call,
each then re-ingested unchanged (must cost 0 calls) and with a tenth of its documents changed
(calls for the changed passages only). The quoted figures of other systems (about 5,900 and
9,900 LLM tokens per passage) are listed beside them. Prints a table, writes DIR/llm_cost.json
and DIR/llm_cost.png.

    python bench/llm_cost.py --dataset hotpotqa --limit 300 --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import pyplot, require_bench_files

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the replay server and the stand-in model live with the tests

from tests.llm.extraction_answers import capitalised_names, extraction_answer  # noqa: E402
from tests.llm.replay_server import ReplayServer  # noqa: E402

QUOTED = {"GraphRAG-style system A (quoted)": 5_900, "GraphRAG-style system B (quoted)": 9_900}
"""LLM tokens per passage reported for two popular GraphRAG systems (issue 13); not measured here."""

SYSTEMS = {"evigraph llm, batched (default)": {}, "evigraph llm, 1 passage per call": {"passages_per_call": 1}}
CHANGED_SHARE = 0.1


def sample(corpus: Path, limit: int, into: Path) -> list[dict[str, Any]]:
    """The first `limit` records of the corpus, written to `into` as JSONL."""
    records = []
    with corpus.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                records.append(json.loads(line))
            if len(records) >= limit:
                break
    write(records, into)
    return records


def write(records: list[dict[str, Any]], path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


async def run_system(corpus: Path, records: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    from evigraph import KnowledgeBase
    from evigraph.ingest.extraction.llm import LLMExtraction
    from evigraph.providers.llms import OpenAICompatibleLLM
    from evigraph.providers.tokenizers import default_tokenizer

    answer = extraction_answer(capitalised_names, default_tokenizer().count)
    with ReplayServer(answer=answer) as server, tempfile.TemporaryDirectory() as tmp:
        llm = OpenAICompatibleLLM("stand-in", base_url=server.url, api_key="sk-bench", timeout=60)
        extractor = LLMExtraction(**options)
        phases: dict[str, Any] = {}
        async with llm, KnowledgeBase(Path(tmp) / "kb.db", extractor=extractor, llm=llm) as kb:
            for phase in ("first", "unchanged", "changed"):
                if phase == "changed":
                    step = max(1, round(1 / CHANGED_SHARE))
                    edited = [
                        {**r, "text": r["text"] + " It was revised in 2024."} if i % step == 0 else r
                        for i, r in enumerate(records)
                    ]
                    write(edited, corpus)
                before = server.calls()
                t0 = time.perf_counter()
                report = await kb.ingest([corpus], progress=False)
                seconds = time.perf_counter() - t0
                if not report.ok or report.llm is None:
                    raise SystemExit(f"{phase} ingest failed: {report.failed[:3]}")
                phases[phase] = {
                    **report.llm.model_dump(),
                    "server_calls": server.calls() - before,
                    "seconds": round(seconds, 2),
                    "documents": report.counts(),
                }
            status = await kb.status()
        write(records, corpus)  # the next system starts from the same corpus
    first = phases["first"]
    return {
        **phases,
        "passages_stored": status.passages,
        "entities": status.entities,
        "relations": status.relations,
        "calls_per_passage": round(first["calls"] / first["passages"], 3),
        "input_per_passage": round(first["input_tokens"] / first["passages"], 1),
        "output_per_passage": round(first["output_tokens"] / first["passages"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"), help="folder of the datasets")
    parser.add_argument("--dataset", default="hotpotqa", help="musique, 2wikimultihopqa or hotpotqa")
    parser.add_argument("--limit", type=int, default=300, help="passages (corpus records) to ingest")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    source = args.data / args.dataset / "corpus.jsonl"
    require_bench_files(source)

    results: dict[str, Any] = {"dataset": args.dataset, "limit": args.limit, "systems": {}}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / f"{args.dataset}.jsonl"
        records = sample(source, args.limit, corpus)
        for name, options in SYSTEMS.items():
            results["systems"][name] = asyncio.run(run_system(corpus, records, options))
    results["quoted_tokens_per_passage"] = QUOTED

    print(f"{args.dataset}: {len(records)} passages through the replay server (stand-in model)")
    head = f"{'system':<36} {'calls/psg':>9} {'in/psg':>7} {'out/psg':>7} {'re-ingest calls':>15}"
    print(head + f" {'changed: calls':>14} {'psg sent':>8}")
    for name, r in results["systems"].items():
        changed = r["changed"]
        print(
            f"{name:<36} {r['calls_per_passage']:>9.3f} {r['input_per_passage']:>7.0f} {r['output_per_passage']:>7.0f} "
            f"{r['unchanged']['server_calls']:>15} {changed['server_calls']:>14} {changed['passages']:>8}"
        )
    for name, tokens in QUOTED.items():
        print(f"{name:<36} {'':>9} {tokens:>7,} tokens per passage (input + output), not measured here")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_cost.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out / 'llm_cost.json'}")
    plot(results, args.out / "llm_cost.png")
    if any(r["unchanged"]["server_calls"] for r in results["systems"].values()):
        raise SystemExit("re-ingesting unchanged documents made LLM calls")


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    systems = results["systems"]
    names = [*systems, *results["quoted_tokens_per_passage"]]
    inputs = [systems[n]["input_per_passage"] if n in systems else 0 for n in names]
    outputs = [systems[n]["output_per_passage"] if n in systems else 0 for n in names]
    quoted = [results["quoted_tokens_per_passage"].get(n, 0) for n in names]
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.barh(names, inputs, color="#3b7dd8", label="input tokens")
    ax.barh(names, outputs, left=inputs, color="#d8863b", label="output tokens")
    ax.barh(names, quoted, color="#999999", label="quoted total")
    ax.set_xlabel("LLM tokens per passage (lower is better)")
    ax.legend(loc="lower right")
    fig.suptitle(f"LLM extraction cost, {results['dataset']} ({results['limit']} passages)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
