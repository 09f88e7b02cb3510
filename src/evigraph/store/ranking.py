"""What graph ranking reads from a store, and the change journal that keeps its index current.

Graph ranking holds the entity-passage graph, the bridge sentences' vectors and the entities'
name vectors in memory (`retrieval/graph_index.py`), because it touches thousands of them per
question. It loads them once and then follows the store's changes document by document: a store
reports which documents and entity vectors changed since a token it gave out, or that the
reader must start over (`full`), for instance after a re-embedding or a repair.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class RankingRow:
    """One passage as graph ranking sees it: its bridge sentences and the entities it mentions."""

    chunk: str
    document: str
    sentences: tuple[tuple[int, int], ...]
    sentence_vectors: tuple[tuple[float, ...], ...] | None
    mentions: tuple[tuple[str, str, tuple[int, ...]], ...]
    """(entity id, entity name, span starts within the passage); no starts: the passage's subject."""


@dataclass(frozen=True)
class EntityVector:
    id: str
    name: str
    vector: tuple[float, ...]


@dataclass(frozen=True)
class RankingText:
    """What is stored without a vector: a passage's bridge sentences, an entity's name or a
    relation's fact.

    For `sentences`, `texts` holds the passage as it is embedded (title, then text) and `spans`
    the sentences' offsets in it: one vector per span is wanted, pooled from one pass over the
    passage (`Embedder.embed_with_spans`). For `entity`, `texts` is the name and `spans` empty.
    For `fact`, `id` is the relation's, `texts` its fact and `ends` its (source, target) entities:
    the embedded engine finds a relation by its ends, not by its id alone.
    """

    kind: Literal["sentences", "entity", "fact"]
    id: str
    texts: tuple[str, ...]
    spans: tuple[tuple[int, int], ...] = ()
    ends: tuple[str, str] | None = None


@dataclass(frozen=True)
class StoreChanges:
    token: str
    full: bool = False
    documents: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()


@dataclass
class ChangeJournal:
    """An in-process record of the writes made through one open store.

    The embedded store has one writing process, so what it wrote is all that changed. Tokens
    carry the journal's own id: a token from an earlier open, or older than what is retained,
    answers `full`.
    """

    keep: int = 10_000
    _id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _seq: int = 0
    _events: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, "doc"|"entity"|"reset", key)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def documents(self, keys: Iterable[str]) -> None:
        self._add("doc", keys)

    def entities(self, ids: Iterable[str]) -> None:
        self._add("entity", ids)

    def reset(self) -> None:
        self._add("reset", [""])

    def _add(self, kind: str, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._seq += 1
                self._events.append((self._seq, kind, key))
            if len(self._events) > self.keep:
                del self._events[: len(self._events) - self.keep]

    def since(self, token: str | None) -> StoreChanges:
        with self._lock:
            now = f"{self._id}:{self._seq}"
            journal, _, seq_text = (token or "").partition(":")
            if journal != self._id or not seq_text.isdigit():
                return StoreChanges(now, full=True)
            seq = int(seq_text)
            oldest = self._events[0][0] if self._events else self._seq + 1
            if seq + 1 < oldest:
                return StoreChanges(now, full=True)  # events it missed were dropped
            later = [(kind, key) for s, kind, key in self._events if s > seq]
        if any(kind == "reset" for kind, _ in later):
            return StoreChanges(now, full=True)
        docs = tuple(dict.fromkeys(key for kind, key in later if kind == "doc"))
        ents = tuple(dict.fromkeys(key for kind, key in later if kind == "entity"))
        return StoreChanges(now, documents=docs, entities=ents)
