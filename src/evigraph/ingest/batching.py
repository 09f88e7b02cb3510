"""Cutting the document stream into batches, reading ahead so stored versions are looked up in bulk.

Before a batch is processed, the ingest asks the store which of its documents it holds already
(an unchanged one is skipped). Asked a batch at a time, that was the ingest's most frequent read:
at 100,000 documents in the embedded store, a 64-key look-up took 17.6 ms alone and about 40 ms
beside a running write, 65 s of a 340 s ingest, on the path that prepares the next write. The
engine joins a larger set of keys in one scan of the documents, which costs about the same for
any number of them (28.6 ms for 64 keys, 30.5 ms for 1,000), so the stream is read a window ahead
and the window's keys are asked together.

A stored version looked up ahead may be seconds older than the write that follows; that was
already so for one batch. Should another process write the same key meanwhile, this ingest writes
its version after it (reported as a change, not as unchanged): versions stay whole and ordered.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from evigraph.models import LoadedDocument, StoredDocument
from evigraph.store.base import GraphStore

AHEAD_BATCHES = 16
"""Batches read ahead (with the passage bound below, so large documents are not held by the
thousand): one look-up of 16 batches' keys costs about what one batch's did."""

LOOKUP_KEYS = 1000
"""Keys per store call."""


def passages_estimate(doc: LoadedDocument) -> int:
    return max(1, len(doc.text) // 1500)


@dataclass
class Batches:
    """The document stream in batches of up to `documents` documents or about `passages` passages."""

    stream: Iterator[LoadedDocument]
    documents: int
    passages: int
    cancelled: Callable[[], bool] = lambda: False
    _ahead: deque[LoadedDocument] = field(default_factory=deque, init=False)
    _ahead_passages: int = field(default=0, init=False)
    exhausted: bool = field(default=False, init=False)
    """The stream has ended: what is read ahead is all that is left (`waiting_passages`)."""

    def __post_init__(self) -> None:
        # A zero bound would read nothing ahead, and the ingest would end at once as if done.
        if self.documents <= 0 or self.passages <= 0:
            raise ValueError(f"batches need positive bounds, got {self.documents} documents, {self.passages} passages")

    def next(self) -> list[LoadedDocument]:
        """The next batch (empty at the end); reads the stream ahead first."""
        self._read_ahead()
        batch: list[LoadedDocument] = []
        size = 0
        while self._ahead:
            estimate = passages_estimate(self._ahead[0])
            if batch and (len(batch) >= self.documents or size + estimate > self.passages):
                break
            batch.append(self._ahead.popleft())
            self._ahead_passages -= estimate
            size += estimate
        return batch

    @property
    def waiting_passages(self) -> int:
        """Passages (estimated) read ahead, not yet in a batch."""
        return self._ahead_passages

    def upcoming(self) -> list[str]:
        """The keys read ahead, not yet in a batch."""
        return [d.key for d in self._ahead]

    def _read_ahead(self) -> None:
        most_docs = self.documents * AHEAD_BATCHES
        most_passages = self.passages * AHEAD_BATCHES
        while len(self._ahead) < most_docs and self._ahead_passages < most_passages:
            if self.cancelled():  # a loader may be slow (a large PDF): stop reading more
                return
            doc = next(self.stream, None)
            if doc is None:
                self.exhausted = True
                return
            self._ahead.append(doc)
            self._ahead_passages += passages_estimate(doc)


@dataclass
class StoredVersions:
    """What the store holds for the keys being ingested, asked for a read-ahead window at a time."""

    store: GraphStore
    empty: bool = False
    """The store held no document when the ingest began, so none of its keys can be stored but
    by another ingest running beside it, which the write's own look-up of the current version
    handles (that document is then written again, not skipped as unchanged). Set, nothing is
    asked: at 100,000 generated passages the look-ups waited out the engine's checkpoints."""
    _found: dict[str, StoredDocument] = field(default_factory=dict, init=False)
    _asked: set[str] = field(default_factory=set, init=False)

    async def take(self, keys: Sequence[str], upcoming: Sequence[str]) -> dict[str, StoredDocument]:
        """The stored documents of `keys`; when one was not asked for yet, `upcoming` keys are
        asked for with it."""
        if self.empty:
            return {}
        if any(k not in self._asked for k in keys):
            ask = [k for k in dict.fromkeys([*keys, *upcoming]) if k not in self._asked]
            for i in range(0, len(ask), LOOKUP_KEYS):
                self._found.update(await self.store.get_documents(ask[i : i + LOOKUP_KEYS]))
            self._asked.update(ask)
        out = {k: self._found.pop(k) for k in keys if k in self._found}
        self._asked.difference_update(keys)
        return out
