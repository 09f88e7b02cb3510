"""A batch's vectors from one model pass per passage: the passage, its bridge sentences, its names.

A mean-pooling model (MiniLM) reads every token of a passage once; a sentence's vector, or an
entity name's, is the mean of the token vectors inside its span (`Embedder.pool_spans`),
so it costs nothing beside the passage's own pass. Names were embedded as texts of their own
before: on 2wikimultihopqa (6.8 new names a passage) that was 0.69x the work of embedding every
passage once, and the ingest could not reach half of dense retrieval's indexing speed with it.

A pooled name reads its words in context, as the question's names are read at search time
(`retrieval.vectors.question_vectors` pools them from the question's pass), so both sides of
the match are alike. Recall@5 with every entity's name pooled from its mentions, against the
same knowledge bases with names embedded alone (all-MiniLM-L6-v2, all 200 dev questions each):
MuSiQue 67.75 against 68.0, HotpotQA 90.5 against 90.5, 2wikimultihopqa 92.12 against 92.12;
pooling the mentions of an entity's first passage only gave the same 67.75 on MuSiQue.

An entity named only by its document's title (the subject, `subjects.with_subject`, mentioned
without spans) pools the title, which heads every passage's embedded text. A name no span gives
(an extractor that reports no spans, a model that pools otherwise) is embedded on its own by
`name_vectors.NameVectors`, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evigraph.ingest.embedding import fill_alone, pool_all
from evigraph.ingest.subjects import subject_name
from evigraph.models import GraphData, Span, TextChunk, embedding_text, normalize_name
from evigraph.providers.embedders import Embedder

Spans = list[tuple[int, int]]


@dataclass(frozen=True)
class DocumentText:
    """What one document of a batch gives the model: its passages and, once extracted, its graph."""

    title: str
    chunks: Sequence[TextChunk]
    graph: GraphData
    bridges: tuple[tuple[Span, ...], ...]  # per chunk, its bridge sentences (`bridges.bridge_sentences`)


@dataclass(frozen=True)
class DocumentVectors:
    passages: list[tuple[float, ...]]  # one per chunk, in order
    sentences: tuple[tuple[tuple[float, ...], ...], ...]  # per chunk, one per bridge sentence
    names: dict[str, tuple[float, ...]]  # entity name -> vector pooled from its mentions


def embed_documents(
    embedder: Embedder, docs: Sequence[DocumentText], after_slice: Callable[[Sequence[int]], None] | None = None
) -> list[DocumentVectors]:
    """Every passage of `docs` embedded once (in `embedding.length_slices`), with its bridge
    sentences and its names' mentions pooled from that pass where the model pools
    (`Embedder.pool_spans`). A bridge sentence it did not pool is embedded on its own; a name
    it did not pool is left to `name_vectors`, which embeds each name once. Blocking: the ingest
    runs it on the embedding thread; `after_slice` gets the indexes (over all the batch's
    passages) of each slice embedded."""
    texts: list[str] = []
    spans: list[Spans] = []  # per passage: its bridge sentences first, then its mentions
    sentences: list[int] = []  # per passage: how many of its spans are bridge sentences
    shifts: list[int] = []  # per passage: where its own text starts in its embedded text
    titles = [_title_span(doc) for doc in docs]
    for doc, title in zip(docs, titles, strict=True):
        named, titled = _mention_spans(doc)
        for c, bridges in zip(doc.chunks, doc.bridges, strict=True):
            text = embedding_text(doc.title, c.text, c.context)
            shift = len(text) - len(c.text)
            own = [(s.start + shift, s.end + shift) for s in bridges]
            sentences.append(len(own))
            own += [(a + shift, b + shift) for a, b in named.get(c.index, ())]
            if title is not None and c.index in titled:
                own.append(title)
            texts.append(text)
            spans.append(list(dict.fromkeys(own)))  # a mention spanning a whole sentence is pooled once
            shifts.append(shift)
    vectors, pooled = pool_all(embedder, texts, spans, after_slice)
    bridged = fill_alone(  # per passage, its bridge sentences' vectors in order
        embedder,
        texts,
        [s[:n] for s, n in zip(spans, sentences, strict=True)],
        [p[:n] for p, n in zip(pooled, sentences, strict=True)],
    )
    out: list[DocumentVectors] = []
    row = 0
    for doc, title in zip(docs, titles, strict=True):
        rows = range(row, row + len(doc.chunks))
        row += len(doc.chunks)
        found = [dict(zip(spans[i], pooled[i], strict=True)) for i in rows]
        out.append(
            DocumentVectors(
                passages=[tuple(vectors[i]) for i in rows],
                sentences=tuple(tuple(tuple(v) for v in bridged[i]) for i in rows),
                names=_pooled_names(doc, found, [shifts[i] for i in rows], title),
            )
        )
    return out


def _mention_spans(doc: DocumentText) -> tuple[dict[int, Spans], set[int]]:
    """Chunk index -> the spans of the names it mentions, in the chunk's own text; and the chunks
    with a mention without spans (the document's subject), whose title is pooled for it."""
    named: dict[int, Spans] = {}
    titled: set[int] = set()
    for m in doc.graph.mentions:
        if m.spans:
            named.setdefault(m.chunk_index, []).extend((s.start, s.end) for s in m.spans)
        else:
            titled.add(m.chunk_index)
    return named, titled


def _title_span(doc: DocumentText) -> tuple[int, int] | None:
    """Where the title names the document's subject, in the title (and so in every embedded
    passage, which it heads), or None when it names none."""
    name = subject_name(doc.title) if doc.title else None
    if name is None:
        return None
    at = doc.title.find(name)
    return (at, at + len(name)) if at >= 0 else (0, len(doc.title))


def _pooled_names(
    doc: DocumentText,
    found: Sequence[dict[tuple[int, int], list[float] | None]],
    shifts: Sequence[int],
    title: tuple[int, int] | None,
) -> dict[str, tuple[float, ...]]:
    """Entity name -> the mean of its mentions' pooled vectors in `doc`, unit length. A mention
    without spans counts as the title's only for the entity the title names (its subject)."""
    import numpy as np

    row = {c.index: i for i, c in enumerate(doc.chunks)}
    subject = normalize_name(subject_name(doc.title) or "") if title is not None else None
    entities = {e.id: e for e in doc.graph.entities}
    gathered: dict[str, list[list[float]]] = {}
    for m in doc.graph.mentions:
        entity, i = entities.get(m.entity_id), row.get(m.chunk_index)
        if entity is None or i is None:
            continue
        if m.spans:
            keys = [(s.start + shifts[i], s.end + shifts[i]) for s in m.spans]
        elif title is not None and subject in {normalize_name(n) for n in (entity.name, *entity.aliases)}:
            keys = [title]
        else:
            continue
        gathered.setdefault(entity.name, []).extend(v for k in keys if (v := found[i].get(k)) is not None)
    out: dict[str, tuple[float, ...]] = {}
    for name, vectors in gathered.items():
        if vectors:
            mean = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
            norm = float(np.linalg.norm(mean))
            out[name] = tuple((mean / norm if norm > 0 else mean).tolist())
    return out
