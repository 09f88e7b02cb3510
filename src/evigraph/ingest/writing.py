"""What an ingest holds between processing and writing: the keys in flight and the next write group.

Kept apart from the pipeline so the rules for when a write starts, and who waits for it, read in
one place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from evigraph.models import DocumentVersion

P = TypeVar("P")
"""What the pipeline keeps beside each version (its pending document)."""


@dataclass
class InFlight:
    """What ingests are doing now: the document keys they work on, so `source_status` can say
    `pending` (counted, as two ingests of one key may overlap: the second waits at the write
    gate), and a turn each of their write transactions takes (`writes`) on a store that takes
    one write at a time (`GraphStore.writes_at_once`).

    Reads an ingesting process serves to others take the same turn
    (`KnowledgeBase.apart_from_writes`): in Kuzu 0.11.3 a full-text query that runs while a write
    transaction updates the index corrupts the process's memory (one reader searching beside a
    writer aborted or segfaulted the process, "malloc(): invalid size", in 4 of 4 eight-second
    runs; no crash with either alone). The ingest itself never searches while it writes.
    """

    _counts: dict[str, int] = field(default_factory=dict)
    writes: asyncio.Lock = field(default_factory=asyncio.Lock)

    def hold(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._counts[key] = self._counts.get(key, 0) + 1

    def release(self, keys: Sequence[str]) -> None:
        for key in keys:
            left = self._counts.get(key, 0) - 1
            if left > 0:
                self._counts[key] = left
            else:
                self._counts.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._counts


@dataclass
class WriteGroup(Generic[P]):
    """Processed batches waiting to be written together.

    A group is written once it holds as many passages as the knowledge base already does, up to
    the store's `write_group_passages`, so a store whose write cost follows its size writes
    O(log n) transactions while it is small and evenly sized ones after. Kuzu 0.11.3, 10,000
    generated passages into a new file, rules extractor: one write per 64-document batch took
    83.7 s, writes of 2,000 documents 53.5 s (1.56x); the gap widens with size, as each of the
    engine's checkpoints rewrites the relationship tables whole.
    """

    stored: int
    """Passages in the knowledge base, including every group handed over so far."""
    versions: list[tuple[P, DocumentVersion]] = field(default_factory=list)
    batches: int = 0
    passages: int = 0

    def add(self, versions: list[tuple[P, DocumentVersion]]) -> None:
        self.versions += versions
        self.batches += 1
        self.passages += sum(len(v.chunks) for _, v in versions)

    def full(self, most: int, to_come: int | None = None) -> bool:
        """Whether to write the group now. `to_come`, once the ingest knows it (the documents are
        all read), is how many passages are left after the group: a group half as large as that is
        written at once, so the last writes shrink down to one batch and overlap the work still
        running, where the last group grown by doubling (up to half the ingest) was written after
        everything else (2wikimultihopqa: 4.3 s of a 30.6 s ingest). Half, because writing a
        passage takes less than half what extracting and embedding one does (2wikimultihopqa with
        MiniLM: 6.4 ms against 16 ms), so the write ends before the model does. Only while the
        knowledge base is under `most`: past it every write pays a checkpoint that grows with the
        file, and the groups are of one size anyway (100,000 generated passages, rules extractor:
        263 passages/s with the last groups shrinking, 285 without, one pair of runs)."""
        if to_come is not None and self.stored < most and self.passages and 2 * self.passages >= to_come:
            return True
        return self.passages >= min(most, self.stored)

    def take(self) -> tuple[list[tuple[P, DocumentVersion]], int]:
        out = (self.versions, self.batches)
        self.stored += self.passages
        self.versions, self.batches, self.passages = [], 0, 0
        return out
