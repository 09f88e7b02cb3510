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
9,900 LLM tokens per passage) are listed beside them.

Then a real model, where its server is installed (the dev extra): SmolLM2-135M-Instruct on
llama-cpp-python's server (`tests/llm/local_model.py`), on the first --real-limit records, with the
default settings. Its row adds what only a real model shows: the share of replies that parsed the
first time, the fallbacks taken (a response format the server refused, a batch retried document by
document), seconds per passage, and a quality figure: the share of stored relations whose two ends
are both named in a passage the relation cites (and of entities named in a passage that mentions
them). Every row reports entities and relations per passage. The bars: at most 1 call and 800
input tokens per passage, for the real model too.

Prints a table, writes DIR/llm_cost.json and DIR/llm_cost.png.

    python bench/llm_cost.py --dataset hotpotqa --limit 300 --real-limit 60 --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
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
from tests.llm.local_model import LocalModelServer, LocalModelUnavailable  # noqa: E402
from tests.llm.replay_server import ReplayServer  # noqa: E402

QUOTED = {"GraphRAG-style system A (quoted)": 5_900, "GraphRAG-style system B (quoted)": 9_900}
"""LLM tokens per passage reported for two popular GraphRAG systems (issue 13); not measured here."""

SYSTEMS = {"evigraph llm, batched (default)": {}, "evigraph llm, 1 passage per call": {"passages_per_call": 1}}
REAL = "evigraph llm, batched, SmolLM2-135M (real)"
CHANGED_SHARE = 0.1
MAX_CALLS_PER_PASSAGE = 1.0
MAX_INPUT_PER_PASSAGE = 800


class Fallbacks(logging.Handler):
    """Counts the fallbacks evigraph logs: a request form the server refused, sent again without
    it (the client), and a batch of documents retried one by one after its call failed (ingest)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.refused_forms = 0
        self.batches_retried = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "refused part of a request" in message:
            self.refused_forms += 1
        elif message.startswith("batched extraction failed"):
            self.batches_retried += 1


async def graph_quality(kb: Any) -> dict[str, Any]:
    """Entities and relations per what their passages say: each relation's two ends named
    (case-insensitively) in a passage it cites; each entity named in a passage mentioning it."""
    from evigraph.store.embedded.packed import unpack_ids  # how the embedded store keeps a relation's passages

    texts = {
        row["id"]: row["text"].casefold()
        for row in (await kb.cypher_query("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text", limit=5000)).rows
    }
    relations = (
        await kb.cypher_query(
            "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.name AS a, b.name AS b, r.source_chunks AS p",
            limit=5000,
        )
    ).rows
    grounded = 0
    for row in relations:
        cited = unpack_ids(row["p"])
        ends = (row["a"].casefold(), row["b"].casefold())
        grounded += any(all(end in texts.get(pid, "") for end in ends) for pid in cited)
    mentions = (
        await kb.cypher_query(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) RETURN e.id AS e, e.name AS name, c.id AS c", limit=5000
        )
    ).rows
    named: dict[str, bool] = {}
    for row in mentions:
        named[row["e"]] = named.get(row["e"], False) or row["name"].casefold() in texts.get(row["c"], "")
    return {
        "relations": len(relations),
        "relations_with_both_ends_in_a_cited_passage": round(grounded / len(relations), 3) if relations else None,
        "entities_named_in_a_mentioning_passage": round(sum(named.values()) / len(named), 3) if named else None,
    }


def per_passage(first: dict[str, Any], status: Any, seconds: float) -> dict[str, Any]:
    """Per passage of the corpus (as stored), not per passage sent: a passage sent again after its
    call failed counts once, so its second call shows as cost."""
    sent = max(1, status.passages)
    calls = max(1, first["calls"])
    return {
        "calls_per_passage": round(first["calls"] / sent, 3),
        "input_per_passage": round(first["input_tokens"] / sent, 1),
        "output_per_passage": round(first["output_tokens"] / sent, 1),
        "parsed_first_time": round((first["calls"] - first["failed_calls"]) / calls, 3),
        "entities_per_passage": round(status.entities / max(1, status.passages), 2),
        "relations_per_passage": round(status.relations / max(1, status.passages), 2),
        "seconds_per_passage": round(seconds / sent, 3),
    }


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
            quality = await graph_quality(kb)
        write(records, corpus)  # the next system starts from the same corpus
    first = phases["first"]
    return {
        **phases,
        "passages_stored": status.passages,
        "entities": status.entities,
        "relations": status.relations,
        **per_passage(first, status, first["seconds"]),
        "quality": quality,
        "fallbacks": {"refused_forms": 0, "batches_retried": 0},
    }


async def run_real(corpus: Path) -> dict[str, Any]:
    """The default extraction with a real small model: a first ingest, then an unchanged one."""
    from evigraph import KnowledgeBase
    from evigraph.ingest.extraction.llm import LLMExtraction
    from evigraph.providers.llms import OpenAICompatibleLLM

    fallbacks = Fallbacks()
    logger = logging.getLogger("evigraph")
    logger.addHandler(fallbacks)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with LocalModelServer() as server, tempfile.TemporaryDirectory() as tmp:
            llm = OpenAICompatibleLLM(server.model, base_url=server.url, api_key="", timeout=600)
            async with llm, KnowledgeBase(Path(tmp) / "kb.db", extractor=LLMExtraction(), llm=llm) as kb:
                t0 = time.perf_counter()
                report = await kb.ingest([corpus], progress=False)
                seconds = time.perf_counter() - t0
                if report.llm is None:
                    raise SystemExit("the real model's ingest asked no LLM")
                again = await kb.ingest([corpus], progress=False)
                status = await kb.status()
                quality = await graph_quality(kb)
            first = {**report.llm.model_dump(), "seconds": round(seconds, 2), "documents": report.counts()}
            return {
                "first": first,
                "unchanged": {
                    **(again.llm.model_dump() if again.llm else {}),
                    "server_calls": again.llm.calls if again.llm else 0,
                },
                "json_support": llm.json_support,
                "passages_stored": status.passages,
                "entities": status.entities,
                "relations": status.relations,
                **per_passage(first, status, seconds),
                "quality": quality,
                "fallbacks": {"refused_forms": fallbacks.refused_forms, "batches_retried": fallbacks.batches_retried},
            }
    finally:
        logger.removeHandler(fallbacks)
        logger.setLevel(level)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"), help="folder of the datasets")
    parser.add_argument("--dataset", default="hotpotqa", help="musique, 2wikimultihopqa or hotpotqa")
    parser.add_argument("--limit", type=int, default=300, help="passages (corpus records) to ingest")
    parser.add_argument(
        "--real-limit", type=int, default=60, help="records for the real model (0: leave it out); it takes seconds each"
    )
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
        if args.real_limit > 0:
            real_corpus = Path(tmp) / f"{args.dataset}-real.jsonl"
            write(records[: args.real_limit], real_corpus)
            try:
                results["systems"][REAL] = {"records": args.real_limit, **asyncio.run(run_real(real_corpus))}
            except LocalModelUnavailable as missing:
                results["real_model_skipped"] = str(missing)
                print(f"real model left out: {missing}")
    results["quoted_tokens_per_passage"] = QUOTED

    print(f"{args.dataset}: {len(records)} passages through the replay server (stand-in model)", end="")
    print(f", the first {args.real_limit} through SmolLM2-135M-Instruct (real)" if REAL in results["systems"] else "")
    head = f"{'system':<42} {'calls/psg':>9} {'in/psg':>7} {'out/psg':>7} {'parsed':>6} {'ent/psg':>7} {'rel/psg':>7}"
    print(head + f" {'rel grounded':>12} {'s/psg':>6} {'re-ingest calls':>15} {'changed: calls':>14}")
    for name, r in results["systems"].items():
        grounded = r["quality"]["relations_with_both_ends_in_a_cited_passage"]
        changed = r.get("changed", {}).get("server_calls", "-")
        print(
            f"{name:<42} {r['calls_per_passage']:>9.3f} {r['input_per_passage']:>7.0f} {r['output_per_passage']:>7.0f} "
            f"{r['parsed_first_time']:>6.0%} {r['entities_per_passage']:>7.2f} {r['relations_per_passage']:>7.2f} "
            f"{'-' if grounded is None else f'{grounded:.0%}':>12} {r['seconds_per_passage']:>6.2f} "
            f"{r['unchanged']['server_calls']:>15} {changed:>14}"
        )
    if REAL in results["systems"]:
        real = results["systems"][REAL]
        print(f"real model: response format {real['json_support']}, fallbacks {real['fallbacks']}")
    for name, tokens in QUOTED.items():
        print(f"{name:<42} {'':>9} {tokens:>7,} tokens per passage (input + output), not measured here")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_cost.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out / 'llm_cost.json'}")
    plot(results, args.out / "llm_cost.png")
    # A document whose extraction failed was not stored: the second ingest tries it again, and only it
    # (in a batch, then alone if that batch fails again: at most two calls each).
    retried = {name: 2 * r["first"]["documents"].get("failed", 0) for name, r in results["systems"].items()}
    if any(r["unchanged"]["server_calls"] > retried[name] for name, r in results["systems"].items()):
        raise SystemExit("re-ingesting unchanged documents made LLM calls")
    over = [
        name
        for name, r in results["systems"].items()
        if r["calls_per_passage"] > MAX_CALLS_PER_PASSAGE or r["input_per_passage"] > MAX_INPUT_PER_PASSAGE
    ]
    if over:
        raise SystemExit(
            f"over {MAX_CALLS_PER_PASSAGE:g} call or {MAX_INPUT_PER_PASSAGE} input tokens per passage: {over}"
        )


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
