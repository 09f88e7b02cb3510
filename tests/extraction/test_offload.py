"""Extraction in the worker process gives exactly what a thread gives, and survives the worker dying."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from evigraph.ingest.extraction import offload
from evigraph.ingest.extraction.offload import MIN_OFFLOAD_CHUNKS, run_offloaded
from evigraph.ingest.extraction.rules import RuleBasedExtraction
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import TextChunk

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the worker process is used on 2+ cores only")

_TEXT = (
    "Dr Ada Lovelace met Charles Babbage at the University of London in June 1833. "
    "Babbage showed her the Difference Engine; Lovelace later wrote about the Analytical Engine."
)


def _documents(n: int) -> list[list[TextChunk]]:
    return [
        [TextChunk(index=i, text=f"{_TEXT} Part {d}-{i}.", start=0, end=len(_TEXT)) for i in range(4)] for d in range(n)
    ]


async def test_a_large_batch_in_the_worker_equals_the_thread_result() -> None:
    docs = _documents(MIN_OFFLOAD_CHUNKS // 4 + 1)  # over the threshold: goes to the worker
    extractor, ontology = RuleBasedExtraction(), DEFAULT_ONTOLOGY
    offloaded = await extractor.extract_many(docs, ontology)
    assert offload._pool is not None  # the worker was started for it
    assert offloaded == extractor.extract_sync(docs, ontology)
    assert any(g.relations for g in offloaded)


def _die_in_worker(value: int) -> int:
    if multiprocessing.parent_process() is not None:  # in the worker: die as a crash would
        os._exit(1)
    return value + 1


async def test_a_dead_worker_leaves_the_batch_to_a_thread_and_is_replaced() -> None:
    assert await run_offloaded(_die_in_worker, 41, chunks=MIN_OFFLOAD_CHUNKS) == 42
    # the next batch gets a fresh worker
    docs = _documents(MIN_OFFLOAD_CHUNKS // 4)
    assert await RuleBasedExtraction().extract_many(docs, DEFAULT_ONTOLOGY) == RuleBasedExtraction().extract_sync(
        docs, DEFAULT_ONTOLOGY
    )
