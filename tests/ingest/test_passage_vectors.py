"""Entity names pooled from their mentions in the passage's own model pass: no name is embedded as a
text of its own when a mention gives it, the title gives the subject's, and a mention the model
never read (past its input limit) leaves the name to be embedded once on its own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evigraph.ingest.embedding import pool_all
from evigraph.ingest.passage_vectors import DocumentText, embed_documents
from evigraph.kb import KnowledgeBase
from evigraph.models import ExtractedEntity, GraphData, Mention, Span, TextChunk, embedding_text
from evigraph.providers.embedders import MiniLMEmbedder
from evigraph.providers.embedders.base import Embedder

TEXT = "Ada Lovelace worked with Charles Babbage in London. Charles Babbage designed the Analytical Engine."


class Recording(MiniLMEmbedder):
    """The bundled MiniLM (numpy runtime: no extra package), keeping the texts it embedded alone."""

    def __init__(self) -> None:
        super().__init__(runtime="numpy")
        self.alone: list[str] = []

    def embed_array(self, texts: Sequence[str]) -> object:
        self.alone += texts
        return super().embed_array(texts)


def pooled(embedder: MiniLMEmbedder, text: str, words: Sequence[str]) -> np.ndarray:
    """The unit mean of the vectors `embedder` pools for every occurrence of `words` in `text`."""
    spans = []
    for word in words:
        at = text.find(word)
        while at >= 0:
            spans.append((at, at + len(word)))
            at = text.find(word, at + 1)
    _, found = embedder.pool_spans([text], [spans])
    mean = np.mean(np.asarray(found[0], dtype=np.float32), axis=0)
    return mean / np.linalg.norm(mean)


async def vectors_by_name(kb: KnowledgeBase) -> dict[str, np.ndarray]:
    return {v.name: np.asarray(v.vector, dtype=np.float32) for v in await kb.store.entity_vectors()}


async def test_names_are_pooled_from_their_mentions_not_embedded_alone(tmp_path: Path) -> None:
    embedder = Recording()
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=embedder) as kb:
        await kb.ingest(text=TEXT, key="note", title="Notes on engines")
        stored = await vectors_by_name(kb)
    assert {"Ada Lovelace", "Charles Babbage", "London"} <= set(stored)
    assert not set(embedder.alone) & set(stored)  # no name was a text of its own
    text = embedding_text("Notes on engines", TEXT)
    mine = pooled(embedder, text, ["Charles Babbage"])  # both mentions, in context
    assert float(stored["Charles Babbage"] @ mine) > 0.9999
    alone = np.asarray(embedder.embed(["Charles Babbage"])[0], dtype=np.float32)
    assert float(stored["Charles Babbage"] @ alone) < 0.99  # not the name read alone


async def test_the_subject_named_only_by_the_title_pools_the_title(tmp_path: Path) -> None:
    embedder = Recording()
    body = "She wrote the first published program, for the engine Charles Babbage designed."
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=embedder) as kb:
        await kb.ingest(text=body, key="ada", title="Ada Lovelace")
        stored = await vectors_by_name(kb)
    assert "Ada Lovelace" in stored and "Ada Lovelace" not in embedder.alone
    title_only = pooled(embedder, embedding_text("Ada Lovelace", body), ["Ada Lovelace"])
    assert float(stored["Ada Lovelace"] @ title_only) > 0.9999


def test_a_mention_past_the_models_input_limit_is_left_to_the_name_and_a_sentence_is_embedded() -> None:
    embedder = Recording()
    filler = "The committee met again and the minutes were read aloud. " * 40  # far past 256 tokens
    text = f"Ada Lovelace met Grace Hopper. {filler}Grace Hopper met Alan Turing."
    ada, grace, alan = (ExtractedEntity.create(n, "Person") for n in ("Ada Lovelace", "Grace Hopper", "Alan Turing"))
    late = text.index("Grace Hopper met")

    def mention(entity: ExtractedEntity, *starts: int) -> Mention:
        return Mention(
            entity_id=entity.id, chunk_index=0, spans=tuple(Span(start=a, end=a + len(entity.name)) for a in starts)
        )

    graph = GraphData(
        entities=(ada, grace, alan),
        mentions=(mention(ada, 0), mention(grace, text.index("Grace"), late), mention(alan, text.index("Alan"))),
    )
    chunk = TextChunk(index=0, text=text, start=0, end=len(text))
    last = Span(start=late, end=len(text))
    doc = DocumentText("", [chunk], graph, ((Span(start=0, end=30), last),))
    (got,) = embed_documents(embedder, [doc])
    assert set(got.names) == {"Ada Lovelace", "Grace Hopper"}  # Grace from her first mention only
    assert embedder.alone == [text[late:]]  # the bridge sentence the model never read, alone; no name
    assert len(got.sentences[0]) == 2


async def test_a_name_no_mention_gave_is_embedded_once_on_its_own(tmp_path: Path) -> None:
    embedder = Recording()
    filler = "The committee met again and the minutes were read aloud. " * 30
    text = f"Ada Lovelace opened it. {filler}Grace Hopper closed it. Grace Hopper left."
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder=embedder) as kb:
        await kb.ingest(text=text, key="long", title="Minutes")
        stored = await vectors_by_name(kb)
        assert await kb.store.pending_ranking_texts(limit=100) == []
    assert {"Ada Lovelace", "Grace Hopper"} <= set(stored)
    assert embedder.alone.count("Grace Hopper") == 1 and "Ada Lovelace" not in embedder.alone


def test_an_embedder_that_overrides_only_embed_with_spans_keeps_pooling_through_it() -> None:
    class Legacy(Embedder):
        name, dimension = "legacy", 1

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[float(len(t))] for t in texts]

        def embed_with_spans(
            self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
        ) -> tuple[list[list[float]], list[list[list[float]]]]:
            return self.embed(texts), [[[-1.0] for _ in s] for s in spans]

    vectors, found = pool_all(Legacy(), ["abcdef", "xy"], [[(0, 2)], []])
    assert vectors == [[6.0], [2.0]] and found == [[[-1.0]], []]
