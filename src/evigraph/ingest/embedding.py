"""Embedding an ingest's texts: in slices of like token count, on one thread, freed memory given back.

Length. A model pads every text of a forward pass to the longest one in it, and on a CPU a
pass costs about the same per token it reads, padding included (MiniLM on 2 cores: 148-168 us
per token from 64 x 8 to 64 x 128 tokens), plus a fixed cost per call of about
`CALL_OVERHEAD_TOKENS` tokens (a pass of one 8-token name: 10.4 ms; 16 names: 24.9 ms). So
`length_slices` sorts the texts by the tokens the model reads (`Embedder.token_lengths`,
characters when it cannot tell) and cuts them where the padding saved pays for another call,
the cheapest cut of the sorted texts under that cost (an exact dynamic programme). Sorting by
characters instead padded 2wikimultihopqa's 9,952 entity names from 53.6k tokens to 91k (a
rare word is many pieces in few characters), and its passages 1.18x; by tokens the names
embedded in 8.0-8.3 s against 13.5-13.9 s in the same run.

One thread. Run from the event loop's default executor, each batch's embedding landed on
whichever worker thread was free, and glibc gives each thread that allocates under contention an
arena of its own, which keeps its high-water mark: the ingesting process's RSS was 1.6 GB of
malloc arenas on 2wikimultihopqa (1,417 passages), its Python objects 29 MB. One thread for all
embedding reuses one arena, and `evigraph.memory.give_back_memory` returns what the batch freed. Three
ingests of 2wikimultihopqa run side by side with MiniLM, about 25 minutes in on a loaded machine:
peak RSS 2,424 MB as they were, 2,317 MB with glibc held to two arenas (`MALLOC_ARENA_MAX=2`),
1,634 MB with `malloc_trim` called every second.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from evigraph.providers.embedders import Embedder
from evigraph.providers.embedders.base import fill_missing_spans

T = TypeVar("T")

CALL_OVERHEAD_TOKENS = 64
"""The fixed cost of one forward pass, in tokens' worth of its per-token cost (see the module docstring)."""

CHARS_PER_TOKEN = 4
"""The estimate of a text's tokens from its characters, for an embedder that cannot count them."""

_executor: ThreadPoolExecutor | None = None


def token_lengths(embedder: Embedder, texts: Sequence[str]) -> list[int]:
    """The tokens `embedder` reads of each text, or an estimate from its characters."""
    counted = embedder.token_lengths(texts) if texts else []
    if counted is not None and len(counted) == len(texts):
        return list(counted)
    return [-(-len(t) // CHARS_PER_TOKEN) + 2 for t in texts]  # the +2: a start and an end token


def length_slices(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indexes of the texts of `lengths` (tokens each) in slices of at most `size`, shortest first.

    Of every way to cut the sorted texts into runs, the one with the fewest padded tokens plus
    `CALL_OVERHEAD_TOKENS` per run; callers put the vectors back in the order of their texts.
    """
    size = max(1, size)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    ordered = [max(1, lengths[i]) for i in order]
    n = len(order)
    best = [0] + [0] * n  # best[j]: cheapest cut of the first j sorted texts
    cut = [0] * (n + 1)  # cut[j]: where the last run of that cut starts
    for j in range(1, n + 1):
        longest = ordered[j - 1]
        best[j], cut[j] = min(
            (best[i] + (j - i) * longest + CALL_OVERHEAD_TOKENS, i) for i in range(max(0, j - size), j)
        )
    runs: list[list[int]] = []
    j = n
    while j > 0:
        runs.append(order[cut[j] : j])
        j = cut[j]
    return runs[::-1]


def pool_all(
    embedder: Embedder,
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    after_slice: Callable[[Sequence[int]], None] | None = None,
) -> tuple[list[list[float]], list[list[list[float] | None]]]:
    """`Embedder.pool_spans` in slices (`length_slices`), vectors in the order of `texts`; None
    for a span the model did not pool (the caller chooses whether to embed it on its own).

    `after_slice` gets the indexes of `texts` each slice embedded: the ingest moves its bar there,
    and may raise there to stop, as a batch holds many slices.
    """
    vectors: list[list[float]] = [[] for _ in texts]
    pooled: list[list[list[float] | None]] = [[] for _ in texts]
    for part in length_slices(token_lengths(embedder, texts), embedder.batch_size):
        got, got_spans = _pool(embedder, [texts[j] for j in part], [spans[j] for j in part])
        if len(got) != len(part) or any(len(g) != len(spans[j]) for g, j in zip(got_spans, part, strict=True)):
            raise ValueError("the embedder returned a different number of vectors than texts and spans")
        for j, vec, span_vectors in zip(part, got, got_spans, strict=True):
            vectors[j], pooled[j] = vec, span_vectors
        if after_slice is not None:
            after_slice(part)
    return vectors, pooled


def fill_alone(
    embedder: Embedder,
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    pooled: list[list[list[float] | None]],
) -> list[list[list[float]]]:
    """`pool_all`'s None spans embedded as texts of their own (each distinct one once, in slices)."""
    return fill_missing_spans(lambda alone: embed_all(embedder, alone), texts, spans, pooled)


def _pool(
    embedder: Embedder, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
) -> tuple[list[list[float]], list[list[list[float] | None]]]:
    """`embedder.pool_spans`; an embedder of its own that overrides only `embed_with_spans`
    (the hook before `pool_spans`) keeps pooling through it."""
    if (
        type(embedder).pool_spans is Embedder.pool_spans
        and type(embedder).embed_with_spans is not Embedder.embed_with_spans
    ):
        vectors, filled = embedder.embed_with_spans(texts, spans)
        return vectors, [list(row) for row in filled]
    return embedder.pool_spans(texts, spans)


def embed_all(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Embed in slices (`length_slices`), vectors in the order of `texts`."""
    out: list[list[float]] = [[] for _ in texts]
    for part in length_slices(token_lengths(embedder, texts), embedder.batch_size):
        vectors = embedder.embed([texts[j] for j in part])
        if len(vectors) != len(part):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(part)} texts")
        for j, vec in zip(part, vectors, strict=True):
            out[j] = vec
    return out


async def on_embedding_thread(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` on the process's one embedding thread (see the module docstring)."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evigraph-embed")
    return await asyncio.get_running_loop().run_in_executor(_executor, functools.partial(fn, *args))
