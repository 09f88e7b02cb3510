"""Graph ranking's inputs in the store contract: bridge sentences, name vectors and the change feed.

Every backend must hand graph ranking the same rows, and say which documents changed since a token
so the ranking index follows writes without reloading (retrieval/ranking_index.py).
"""

from __future__ import annotations

import pytest
from tests.store.contract.conftest import ADA, ALPHA, BABBAGE, BETA, ENGINE, LONDON, covers

from evigraph.models import DocumentVersion, Span
from evigraph.store import GraphStore


def with_bridges(v: DocumentVersion, vectors: bool) -> DocumentVersion:
    """`v` with its first chunk's only sentence marked a bridge sentence (it names several entities)."""
    first = v.chunks[0]
    spans = ((Span(start=0, end=len(first.text)),),) + ((),) * (len(v.chunks) - 1)
    vecs = (((0.6, 0.8, 0.0),),) + ((),) * (len(v.chunks) - 1) if vectors else None
    return v.model_copy(update={"sentences": spans, "sentence_embeddings": vecs})


@covers("ranking_rows")
async def test_ranking_rows_carry_sentences_vectors_and_mentions(store: GraphStore) -> None:
    await store.write_versions([with_bridges(ALPHA, vectors=True), BETA])
    rows = {r.chunk: r for r in await store.ranking_rows()}
    alpha = [c.id for c in await store.document_passages(ALPHA.key)]
    assert set(rows) == {*alpha, *(c.id for c in await store.document_passages(BETA.key))}
    first = rows[alpha[0]]
    assert first.document == ALPHA.key
    assert first.sentences == ((0, len(ALPHA.chunks[0].text)),)
    assert first.sentence_vectors is not None and [round(x, 3) for x in first.sentence_vectors[0]] == [0.6, 0.8, 0.0]
    mentioned = {eid: (name, starts) for eid, name, starts in first.mentions}
    assert set(mentioned) == {ADA, BABBAGE, LONDON}
    assert mentioned[ADA] == ("Ada Lovelace", (ALPHA.chunks[0].text.index("Ada Lovelace"),))  # starts in the passage
    assert rows[alpha[1]].sentences == () and rows[alpha[1]].sentence_vectors is None
    only_beta = await store.ranking_rows([BETA.key])
    assert {r.document for r in only_beta} == {BETA.key}
    assert await store.ranking_rows([]) == []


@covers("pending_ranking_texts", "write_ranking_vectors", "entity_vectors")
async def test_sentences_and_names_wait_for_vectors(store: GraphStore) -> None:
    await store.write_versions([with_bridges(ALPHA, vectors=False)])
    pending = await store.pending_ranking_texts(limit=100)
    sentences = [t for t in pending if t.kind == "sentences"]
    names = {t.id: t.texts for t in pending if t.kind == "entity"}
    [job] = sentences  # the passage as it is embedded (title first), the sentence's offsets in it
    text = ALPHA.chunks[0].text
    assert job.texts == (f"{ALPHA.title}\n{text}",)
    assert [job.texts[0][a:b] for a, b in job.spans] == [text]
    assert names[ADA] == ("Ada Lovelace",) and len(names) == 4  # every entity of the document
    assert all(t.spans == () for t in pending if t.kind == "entity")
    assert await store.entity_vectors() == []
    with pytest.raises(ValueError, match="vectors for"):  # refused, not left pending forever
        await store.write_ranking_vectors([(job, [])])
    await store.write_ranking_vectors([(t, [[1.0, 0.0, 0.0]] * max(1, len(t.spans))) for t in pending])
    assert await store.pending_ranking_texts() == []
    found = {v.id: v for v in await store.entity_vectors()}
    assert set(found) == set(names) and found[ADA].name == "Ada Lovelace" and found[ADA].vector == (1.0, 0.0, 0.0)
    assert [v.id for v in await store.entity_vectors([ADA, "no-such-entity"])] == [ADA]
    row = next(r for r in await store.ranking_rows([ALPHA.key]) if r.sentences)
    assert row.sentence_vectors == ((1.0, 0.0, 0.0),)
    await store.set_embedding_model(None)  # a new model: every vector goes, names and sentences too
    assert await store.entity_vectors() == []
    assert len(await store.pending_ranking_texts(limit=100)) == len(pending)


@covers("ranking_changes")
async def test_change_feed_names_the_documents_written(store: GraphStore) -> None:
    first = await store.ranking_changes(None)
    assert first.full  # no token: read everything
    await store.write_versions([ALPHA])
    after_write = await store.ranking_changes(first.token)
    assert not after_write.full and after_write.documents == (ALPHA.key,)
    quiet = await store.ranking_changes(after_write.token)
    assert not quiet.full and quiet.documents == () and quiet.entities == ()
    await store.delete_document(ALPHA.key)
    assert (await store.ranking_changes(quiet.token)).documents == (ALPHA.key,)
    assert (await store.ranking_changes("another-store:3")).full  # a token this store never gave
    token = (await store.ranking_changes(quiet.token)).token
    await store.set_embedding_model(None)
    assert (await store.ranking_changes(token)).full  # every vector changed


@covers("write_versions")
async def test_a_created_entity_takes_its_names_vector_with_it(store: GraphStore) -> None:
    """What the ingest embedded before the write (`DocumentVersion.name_embeddings`) lands with
    the entities the write creates; an entity stored already keeps the vector it has."""
    named = ALPHA.model_copy(update={"name_embeddings": {"Ada Lovelace": (0.0, 1.0, 0.0), "London": (0.0, 0.0, 1.0)}})
    await store.write_versions([named])
    found = {v.id: v.vector for v in await store.entity_vectors()}
    assert found == {ADA: (0.0, 1.0, 0.0), LONDON: (0.0, 0.0, 1.0)}
    waiting = {t.id for t in await store.pending_ranking_texts(limit=100) if t.kind == "entity"}
    assert waiting == {BABBAGE, ENGINE}  # no vector given: embedded after the write, as before
    again = ALPHA.model_copy(update={"name_embeddings": {"Ada Lovelace": (1.0, 0.0, 0.0)}})
    await store.write_versions([again])  # a new version of the document: Ada exists, unchanged
    assert {v.id: v.vector for v in await store.entity_vectors([ADA])} == {ADA: (0.0, 1.0, 0.0)}


@covers("search_facts")
async def test_relations_are_found_by_the_vectors_of_their_facts(store: GraphStore) -> None:
    """Facts wait for vectors with the names (one job per relation, with its ends), and the store
    then finds the relations nearest a vector, with their source passages: what the `facts`
    path's vector leg feeds fusion."""
    await store.write_versions([ALPHA])
    assert await store.search_facts([1.0, 0.0, 0.0], 5) == []  # nothing embedded yet
    pending = await store.pending_ranking_texts(limit=100)
    facts = {t.id: t for t in pending if t.kind == "fact"}
    by_fact = {t.texts[0]: t for t in facts.values()}
    met, designed = "Ada Lovelace met Charles Babbage in London.", "Charles Babbage designed the Analytical Engine."
    assert set(by_fact) == {met, designed} and len(facts) == 3  # ALPHA chains 2 + 1 relations
    assert by_fact[designed].ends == (BABBAGE, ENGINE)
    vectors = {met: [0.0, 1.0, 0.0], designed: [0.6, 0.8, 0.0]}
    await store.write_ranking_vectors(
        [(t, [vectors[t.texts[0]]] if t.kind == "fact" else [[0.0, 0.0, 1.0]] * max(1, len(t.spans))) for t in pending]
    )
    assert await store.pending_ranking_texts() == []
    found = await store.search_facts([1.0, 0.0, 0.0], 2)
    [first, _] = found
    assert first[0].fact == designed and round(first[1], 3) == 0.6
    assert (first[0].source, first[0].target) == (BABBAGE, ENGINE)
    second_passage = (await store.document_passages(ALPHA.key))[1].id
    assert first[0].source_passages == [second_passage]
    assert [r.fact for r, _ in await store.search_facts([0.0, 1.0, 0.0], 5)][:2] == [met, met]
    assert await store.search_facts([1.0, 0.0, 0.0], 0) == []
    await store.delete_document(ALPHA.key)  # a deleted document's relations are not found
    assert await store.search_facts([1.0, 0.0, 0.0], 5) == []
    await store.write_versions([ALPHA])
    await store.set_embedding_model(None)  # a new model: the facts wait again
    assert sum(t.kind == "fact" for t in await store.pending_ranking_texts(limit=100)) == 3
    assert await store.search_facts([1.0, 0.0, 0.0], 5) == []
