"""The entity-passage graph and its vectors in memory, kept current document by document.

Graph ranking walks thousands of sentence and entity vectors and runs PageRank over every passage
for each question; reading them from the store per question would cost more than the whole
retrieval budget. The index loads them once, then asks the store which documents changed since
its last look (`GraphStore.ranking_changes`) and re-reads only those: adding or deleting a
document costs a read of that document, not a reload. Rows of removed passages are marked dead
and skipped; they are compacted away once they are a quarter of the index.

Queries use an immutable `Snapshot`, so a refresh never changes the arrays a running question
reads, and the numeric work can run in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evigraph.ingest.bridges import sentence_entities
from evigraph.models import normalize_name
from evigraph.retrieval.ranking_files import NAME, save_snapshot, saved_snapshot
from evigraph.retrieval.ranking_snapshot import Snapshot, Walk, csr_walk
from evigraph.store.base import GraphStore
from evigraph.store.ranking import EntityVector, RankingRow

COMPACT_SHARE = 0.25
"""Rebuild the rows without the dead ones when these are this share of all passages."""


@dataclass
class _Passage:
    chunk: str
    document: str
    alive: bool
    mentions: list[tuple[int, int]]  # (entity row, count)
    sentences: list[tuple[list[int], Any]]  # (entity rows, vector)


@dataclass
class RankingIndex:
    """Follows one store; `snapshot()` brings it up to date and returns what a question reads."""

    _token: str | None = None
    _passages: list[_Passage] = field(default_factory=list)
    _row_of: dict[str, int] = field(default_factory=dict)  # chunk id -> passage row
    _by_document: dict[str, list[int]] = field(default_factory=dict)
    _entity_row: dict[str, int] = field(default_factory=dict)  # normalised name -> entity node
    _entity_keys: list[str] = field(default_factory=list)
    _entity_names: list[str] = field(default_factory=list)
    _seen_ids: set[str] = field(default_factory=set)  # entity ids met in rows or with a vector
    _entity_vectors: dict[int, Any] = field(default_factory=dict)
    _dead: int = 0
    _snapshot: Snapshot | None = None
    _saved_only: bool = False  # the snapshot was read from disk: no rows are held to update it with
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    loads: int = 0
    """Full loads so far (tests check that an added document does not cause one)."""

    async def snapshot(self, store: GraphStore) -> Snapshot:
        async with self._lock:
            changes = await store.ranking_changes(self._token)
            if self._token is None:
                # Read after the token: a write in between shows as a change at the next question.
                saved = await saved_snapshot(store)
                if saved is not None:
                    self._token, self._snapshot, self._saved_only = changes.token, saved, True
                    return saved
            loaded_at: str | None = None
            if changes.full or self._token is None or (self._saved_only and (changes.documents or changes.entities)):
                loaded_at = await store.write_generation()
                await self._load(store)
                self._saved_only = False
            elif changes.documents or changes.entities:
                await self._apply(store, changes.documents, changes.entities)
            self._token = changes.token
            if self._snapshot is None:
                self._snapshot = await asyncio.to_thread(self._compile)
                if loaded_at is not None and not self._snapshot.empty:
                    await save_snapshot(store, self._snapshot, loaded_at)
            return self._snapshot

    async def save(self, store: GraphStore) -> None:
        """Save the snapshot at the store's generation, brought up to date first, if this index
        follows the store (it answered a question) and the saved one is older: a snapshot is saved
        only after a full load, so a session that wrote after its first question left it behind,
        and the next open read every passage's rows and vectors again. An index that never loaded
        leaves that to the next open, as before."""
        files = store.saved_index_files()
        generation = await store.write_generation() if files is not None else None
        if files is None or generation is None or self._token is None:
            return
        if files.generation(NAME) == generation:
            return  # saved at this generation already
        snap = await self.snapshot(store)
        if not snap.empty:
            await save_snapshot(store, snap, generation)  # unless a write moved the generation meanwhile

    async def _load(self, store: GraphStore) -> None:
        self._passages, self._row_of, self._by_document, self._dead = [], {}, {}, 0
        self._entity_row, self._entity_keys, self._entity_names, self._entity_vectors = {}, [], [], {}
        self._seen_ids = set()
        self.loads += 1
        self._add_vectors(await store.entity_vectors(None))
        self._add_rows(await store.ranking_rows(None))
        self._snapshot = None

    async def _apply(self, store: GraphStore, documents: Sequence[str], entities: Sequence[str]) -> None:
        for key in documents:
            for row in self._by_document.pop(key, []):
                if self._passages[row].alive:
                    self._passages[row].alive = False
                    self._dead += 1
        rows = await store.ranking_rows(list(documents)) if documents else []
        fresh = {eid for r in rows for eid, _, _ in r.mentions if eid not in self._seen_ids}
        self._add_vectors(await store.entity_vectors(sorted(fresh | set(entities))))
        self._add_rows(rows)
        if self._dead > COMPACT_SHARE * max(1, len(self._passages)):
            self._compact()
        self._snapshot = None

    def _entity(self, eid: str, name: str) -> int:
        """The node of an entity: one per normalised name, whatever labels the name was given.

        Labels split a name when the extractor typed it differently in different batches, and a
        document's subject ("Concept") is often the same person another article names ("Person");
        for ranking they are one thing, or the hop from one article to the other is lost.
        """
        self._seen_ids.add(eid)
        key = normalize_name(name) or eid
        row = self._entity_row.get(key)
        if row is None:
            row = self._entity_row[key] = len(self._entity_keys)
            self._entity_keys.append(key)
            self._entity_names.append(name)
        return row

    def _add_vectors(self, vectors: Sequence[EntityVector]) -> None:
        import numpy as np

        for v in vectors:
            self._entity_vectors[self._entity(v.id, v.name)] = np.asarray(v.vector, dtype=np.float32)

    def _add_rows(self, rows: Sequence[RankingRow]) -> None:
        import numpy as np

        for r in rows:
            counts: dict[int, int] = {}
            nodes: list[tuple[int, tuple[int, ...]]] = []
            for eid, name, starts in r.mentions:
                e = self._entity(eid, name)
                nodes.append((e, starts))
                counts[e] = counts.get(e, 0) + max(1, len(starts))
            sentences: list[tuple[list[int], Any]] = []
            if r.sentence_vectors is not None:
                joined = sentence_entities(r.sentences, nodes)
                for ents, vec in zip(joined, r.sentence_vectors, strict=True):
                    sentences.append((sorted(ents), np.asarray(vec, dtype=np.float32)))
            row = len(self._passages)
            self._passages.append(_Passage(r.chunk, r.document, True, list(counts.items()), sentences))
            self._row_of[r.chunk] = row
            self._by_document.setdefault(r.document, []).append(row)

    def _compact(self) -> None:
        live = [p for p in self._passages if p.alive]
        self._passages, self._row_of, self._by_document, self._dead = [], {}, {}, 0
        for p in live:
            row = len(self._passages)
            self._passages.append(p)
            self._row_of[p.chunk] = row
            self._by_document.setdefault(p.document, []).append(row)

    def _compile(self) -> Snapshot:
        import numpy as np

        n_entities = len(self._entity_keys)
        dimension = next((len(v) for v in self._entity_vectors.values()), 0)
        for p in self._passages:
            if dimension == 0 and p.sentences:
                dimension = len(p.sentences[0][1])
        vectors = np.zeros((n_entities, dimension), dtype=np.float32)
        has_vector = np.zeros(n_entities, dtype=bool)
        for e, vec in self._entity_vectors.items():
            if len(vec) == dimension:
                vectors[e] = vec
                has_vector[e] = True
        count = np.zeros(n_entities, dtype=np.float64)
        edge_e: list[int] = []
        edge_p: list[int] = []
        edge_c: list[float] = []
        sentence_rows: list[Any] = []
        sentence_entities_: list[list[int]] = []
        entity_sentences: list[list[int]] = [[] for _ in range(n_entities)]
        alive = np.zeros(len(self._passages), dtype=bool)
        for row, p in enumerate(self._passages):
            if not p.alive:
                continue
            alive[row] = True
            for e, c in p.mentions:
                edge_e.append(e)
                edge_p.append(row)
                edge_c.append(float(c))
                count[e] += 1
            for ents, vec in p.sentences:
                if len(vec) != dimension:
                    continue
                s = len(sentence_rows)
                sentence_rows.append(vec)
                sentence_entities_.append(ents)
                for e in ents:
                    entity_sentences[e].append(s)
        edge_entity = np.asarray(edge_e, dtype=np.int64)
        edge_passage = np.asarray(edge_p, dtype=np.int64)
        edge_count = np.asarray(edge_c, dtype=np.float64)
        walk = _walks(edge_entity, edge_passage, edge_count, len(self._passages), n_entities)
        return Snapshot(
            passages=[p.chunk for p in self._passages],
            alive=alive,
            entity_keys=list(self._entity_keys),
            entity_names=list(self._entity_names),
            entity_vectors=vectors,
            entity_usable=has_vector & (count > 0),
            passage_count=count,
            # (rows, dimension): no vector at all (ingested without an embedder) is (0, 0), not -1 by 0
            sentence_vectors=np.asarray(sentence_rows, dtype=np.float32).reshape(len(sentence_rows), dimension),
            sentence_entities=sentence_entities_,
            entity_sentences=entity_sentences,
            edge_entity=edge_entity,
            edge_passage=edge_passage,
            edge_count=edge_count,
            walk=walk,
            row_of=dict(self._row_of),
            node_of=dict(self._entity_row),
        )


def _walks(edge_entity: Any, edge_passage: Any, edge_count: Any, n_passages: int, n_entities: int) -> Walk:
    """The transition matrix of the undirected passage-entity graph, column `from`, row `to`.

    An edge weighs the entity's share of the passage's mentions, so a passage that names one
    entity ten times leads there rather than to the one it names in passing; a node splits its
    step among its edges in proportion to those weights.

    Compressed rows, because PageRank multiplies by it twenty times per question: on MuSiQue's
    dev knowledge base (25,514 nodes, 73,504 directed edges) twenty CSR products took 1.4 ms
    where gathering and `bincount`-summing the edge arrays took 6.4 ms; one `bincount` over the
    rows (`Walk`, numpy) takes 0.64 ms a product there, scipy's 0.25 ms.
    """
    import numpy as np

    per_passage = np.bincount(edge_passage, weights=edge_count, minlength=n_passages)
    weight = edge_count / np.where(per_passage[edge_passage] > 0, per_passage[edge_passage], 1.0)
    entity_nodes = edge_entity + n_passages
    walk_from = np.concatenate([edge_passage, entity_nodes])
    walk_to = np.concatenate([entity_nodes, edge_passage])
    both = np.concatenate([weight, weight])
    degree = np.bincount(walk_from, weights=both, minlength=n_passages + n_entities)
    prob = both / np.where(degree[walk_from] > 0, degree[walk_from], 1.0)
    n = n_passages + n_entities
    return csr_walk(*Walk.csr_of(walk_to, walk_from, prob, n), n)
