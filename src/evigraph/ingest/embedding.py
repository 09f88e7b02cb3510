"""Embedding an ingest's texts: in slices of like length, on one thread, freed memory given back.

Length. A model pads every text of a forward pass to the longest one in it, so a slice of mixed
lengths pays for the longest text many times over. The ingest embeds a batch (up to 64
documents) at a time, and cut into slices of the embedder's batch size (64) a batch is one slice:
on the bench corpora (MiniLM tokens, bench/retrieval.py's dev sets) that padded the passages to
2.1-3.1x their real tokens (attention, quadratic in length: 3.7-5.9x), where sorting the whole
corpus, as dense indexing does, pads 1.02-1.07x. Cutting a slice where a text is more than
`LENGTH_SPREAD` times longer than the slice's shortest (plus `LENGTH_SLACK`, so names stay
together) pads 1.13-1.15x (attention 1.2-1.27x), with about six slices per batch.

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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from evigraph.providers.embedders import Embedder

T = TypeVar("T")

LENGTH_SPREAD = 1.3
"""A slice ends before a text longer than this times the slice's shortest (plus the slack)."""

LENGTH_SLACK = 32
"""Characters (about eight tokens) any text may exceed the slice's shortest by: short texts such
as entity names differ by large ratios and little padding, so they stay in full slices."""

_executor: ThreadPoolExecutor | None = None


def length_slices(texts: Sequence[str], size: int) -> Iterator[list[int]]:
    """Indexes of `texts` in slices of at most `size`, shortest texts first, each slice's texts of
    like length (see the module docstring); callers put the vectors back in the order of `texts`."""
    size = max(1, size)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    part: list[int] = []
    for i in order:
        if part and (len(part) >= size or len(texts[i]) > LENGTH_SPREAD * len(texts[part[0]]) + LENGTH_SLACK):
            yield part
            part = []
        part.append(i)
    if part:
        yield part


def embed_all_with_spans(
    embedder: Embedder,
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    after_slice: Callable[[Sequence[int]], None] | None = None,
) -> tuple[list[list[float]], list[list[list[float]]]]:
    """`Embedder.embed_with_spans` in slices (`length_slices`), vectors in the order of `texts`.

    `after_slice` gets the indexes of `texts` each slice embedded: the ingest moves its bar there,
    and may raise there to stop, as a batch holds many slices.
    """
    vectors: list[list[float]] = [[] for _ in texts]
    pooled: list[list[list[float]]] = [[] for _ in texts]
    for part in length_slices(texts, embedder.batch_size):
        got, got_spans = embedder.embed_with_spans([texts[j] for j in part], [spans[j] for j in part])
        if len(got) != len(part) or any(len(g) != len(spans[j]) for g, j in zip(got_spans, part, strict=True)):
            raise ValueError("the embedder returned a different number of vectors than texts and spans")
        for j, vec, span_vectors in zip(part, got, got_spans, strict=True):
            vectors[j], pooled[j] = vec, span_vectors
        if after_slice is not None:
            after_slice(part)
    return vectors, pooled


def embed_all(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Embed in slices (`length_slices`), vectors in the order of `texts`."""
    out: list[list[float]] = [[] for _ in texts]
    for part in length_slices(texts, embedder.batch_size):
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
