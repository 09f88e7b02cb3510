"""Embedding what was stored without a vector: passages, bridge sentences, entity names and
relation facts.

Ingest embeds passages and bridge sentences as it goes; entity names and relation facts are
embedded once each, after the documents are written, because only the store knows which are new. Whatever an ingest
without an embedder left (or `reembed` cleared) is embedded here by `finalize`.
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.ingest.embedding import embed_all, fill_alone, on_embedding_thread, pool_all
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore

BATCH = 512
"""Passages embedded and written at a time."""

NAME_BATCH = 4096
"""Texts read at a time for `embed_ranking_texts`: cut by `length_slices`, 2wikimultihopqa's
9,952 names pad 1.007x their tokens 4,096 at a time, 1.04x 512 at a time (1.70x in slices by
characters), 1.002x all at once."""


async def embed_passages(store: GraphStore, embedder: Embedder) -> int:
    """Embed every passage without a vector; returns how many."""
    done = 0
    while batch := await store.pending_embeddings(limit=BATCH):
        vectors = await on_embedding_thread(embed_all, embedder, [text for _, text in batch])
        await store.write_embeddings([(cid, vec) for (cid, _), vec in zip(batch, vectors, strict=True)])
        done += len(batch)
    return done


async def embed_ranking_texts(store: GraphStore, embedder: Embedder, *, facts: bool = True) -> int:
    """Embed every bridge sentence, entity name and relation fact without a vector; returns how
    many vectors.

    Names are read `NAME_BATCH` at a time so they are sorted by tokens together: a corpus's
    names run from one piece to forty, and a few hundred at a time cut into slices that each
    span a wide range of lengths. A name that several entities share (one per label) is
    embedded once, and so is a fact several relations share (a sentence naming three entities
    states three relations). Without `facts` relation facts wait: only the fact leg reads
    their vectors, and they are most of the texts (2wiki: 5.36 texts a passage with them).
    """
    done = 0
    while batch := await store.pending_ranking_texts(limit=NAME_BATCH, facts=facts):
        passages = [job for job in batch if job.kind == "sentences"]
        for start in range(0, len(passages), BATCH):
            part = passages[start : start + BATCH]
            pooled = await on_embedding_thread(
                sentence_vectors, embedder, [job.texts[0] for job in part], [job.spans for job in part]
            )
            await store.write_ranking_vectors(list(zip(part, pooled, strict=True)))
            done += sum(len(vectors) for vectors in pooled)
        for kind in ("entity", "fact"):
            texts = [job for job in batch if job.kind == kind]
            if texts:
                distinct = list(dict.fromkeys(job.texts[0] for job in texts))
                by_text = dict(zip(distinct, await on_embedding_thread(embed_all, embedder, distinct), strict=True))
                await store.write_ranking_vectors([(job, [by_text[job.texts[0]]]) for job in texts])
                done += len(texts)
    return done


def sentence_vectors(
    embedder: Embedder, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
) -> list[list[list[float]]]:
    """Every span of `texts` pooled from its text's pass, or embedded on its own where the model
    did not pool it (past its input limit): a bridge sentence needs its vector."""
    _, found = pool_all(embedder, texts, spans)
    return fill_alone(embedder, texts, spans, found)
