"""Embedding what was stored without a vector: passages, bridge sentences and entity names.

Ingest embeds passages and bridge sentences as it goes; entity names are embedded once each, after
the documents are written, because only the store knows which names are new. Whatever an ingest
without an embedder left (or `reembed` cleared) is embedded here by `finalize`.
"""

from __future__ import annotations

from evigraph.ingest.embedding import embed_all, embed_all_with_spans, on_embedding_thread
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore

BATCH = 512


async def embed_passages(store: GraphStore, embedder: Embedder) -> int:
    """Embed every passage without a vector; returns how many."""
    done = 0
    while batch := await store.pending_embeddings(limit=BATCH):
        vectors = await on_embedding_thread(embed_all, embedder, [text for _, text in batch])
        await store.write_embeddings([(cid, vec) for (cid, _), vec in zip(batch, vectors, strict=True)])
        done += len(batch)
    return done


async def embed_ranking_texts(store: GraphStore, embedder: Embedder) -> int:
    """Embed every bridge sentence and entity name without a vector; returns how many vectors."""
    done = 0
    while batch := await store.pending_ranking_texts(limit=BATCH):
        passages = [job for job in batch if job.kind == "sentences"]
        names = [job for job in batch if job.kind == "entity"]
        _, pooled = await on_embedding_thread(
            embed_all_with_spans, embedder, [job.texts[0] for job in passages], [job.spans for job in passages]
        )
        name_vectors = await on_embedding_thread(embed_all, embedder, [job.texts[0] for job in names])
        rows = list(zip(passages, pooled, strict=True))
        rows += [(job, [vec]) for job, vec in zip(names, name_vectors, strict=True)]
        await store.write_ranking_vectors(rows)
        done += sum(len(vectors) for _, vectors in rows)
    return done
