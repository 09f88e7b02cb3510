"""Entity names embedded as the ingest goes, so each new entity is written with its vector.

Where the model pools tokens, a name comes from its mentions in the passages' own pass
(`passage_vectors`); this embeds the names left without one (an extractor that gives no
spans, a model that cannot pool), each once, as a text of its own.

A name's vector set on a stored entity afterwards cost Kuzu 0.9 ms an entity
(2wikimultihopqa: 9,856 entities, 8.8 s of a 56 s ingest, in statements of 260); given to the
write that creates the entity, it costs about what the name itself does. Each batch's names
are embedded on the embedding thread as soon as its graph is resolved, so they overlap the next
batch's extraction instead of following the last write; a name is embedded once per ingest
and not at all when the store holds its entity with a vector. Whatever this leaves (a failed
embedding, a write retried in halves that split a group's names from its entities) stays
without a vector, and `ingest.vectors.embed_ranking_texts` embeds it after the ingest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TypeVar

from evigraph.errors import StoreUnavailableError
from evigraph.ingest.embedding import embed_all, on_embedding_thread
from evigraph.models import DocumentVersion
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore

log = logging.getLogger(__name__)

P = TypeVar("P")
Vectors = dict[str, tuple[float, ...]]


class NameVectors:
    """The name vectors of one ingest run: started per batch (`start`), handed to the write of
    the versions (`attach`), every task awaited before the run ends (`close`)."""

    def __init__(self, store: GraphStore, embedder: Embedder) -> None:
        self.store, self.embedder = store, embedder
        self._named: set[str] = set()  # entity ids whose names this run embeds or embedded
        self._by_key: dict[str, asyncio.Task[Vectors]] = {}

    def start(self, versions: Sequence[DocumentVersion]) -> None:
        """Embed the names of the entities in `versions` not met before in this run, but for
        those their passages' pass gave a vector (`DocumentVersion.name_embeddings`)."""
        named = []
        for v in versions:
            pooled = v.name_embeddings or {}
            for e in v.graph.entities:
                if e.id not in self._named and e.name not in pooled:
                    named.append((e.id, e.name))
        if not named:
            return
        self._named.update(i for i, _ in named)
        task = asyncio.create_task(self._embed(named))
        for v in versions:
            self._by_key[v.key] = task

    async def _embed(self, named: list[tuple[str, str]]) -> Vectors:
        try:
            known = {v.id for v in await self.store.entity_vectors(sorted({i for i, _ in named}))}
            names = list(dict.fromkeys(name for i, name in named if i not in known))
            vectors = await on_embedding_thread(embed_all, self.embedder, names) if names else []
        except StoreUnavailableError:
            raise
        except Exception as exc:  # the names wait for `embed_ranking_texts`; the documents are fine
            log.warning("embedding entity names failed (%s); they are embedded after the ingest", exc)
            return {}
        return {name: tuple(vec) for name, vec in zip(names, vectors, strict=True)}

    async def attach(self, versions: list[tuple[P, DocumentVersion]]) -> list[tuple[P, DocumentVersion]]:
        """`versions`, each with the vectors of its own entities' names (`DocumentVersion.name_embeddings`)."""
        tasks = {id(t): t for _, v in versions if (t := self._by_key.pop(v.key, None)) is not None}
        if not tasks:
            return versions
        by_name: Vectors = {}
        for got in await asyncio.gather(*tasks.values()):
            by_name.update(got)
        out = []
        for p, v in versions:
            mine = {e.name: by_name[e.name] for e in v.graph.entities if e.name in by_name}
            if mine:
                v = v.model_copy(update={"name_embeddings": {**mine, **(v.name_embeddings or {})}})
            out.append((p, v))
        return out

    async def close(self) -> None:
        """Wait for the tasks of batches that were dropped (a stop) or never written."""
        tasks = {id(t): t for t in self._by_key.values()}
        self._by_key.clear()
        if tasks:
            await asyncio.gather(*tasks.values(), return_exceptions=True)
