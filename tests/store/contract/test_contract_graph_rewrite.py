"""Typing again at finalize, the store's half: found names read back, graphs replaced in place."""

from __future__ import annotations

from tests.store.contract.conftest import ADA, ALPHA, BABBAGE, BETA, LONDON, covers, eid, version

from evigraph.models import ExtractedRelation, Span
from evigraph.store import GraphStore
from evigraph.store.graph_rewrite import DocumentGraph

FOUND = ('[[0,12,"Person"],[17,32,"Person"],[36,42,"Location"]]', '[[0,15,"Person"],[29,46,"Product"]]')
"""What an offline extractor found in ALPHA's two passages, before typing."""

LONDON_ORG = eid("London", "Organization")


def retyped() -> DocumentGraph:
    """ALPHA's graph with London typed as an organisation: one entity relabelled, the rest as before."""
    graph = version(
        ALPHA.key,
        [c.text for c in ALPHA.chunks],
        [
            [("Ada Lovelace", "Person"), ("Charles Babbage", "Person"), ("London", "Organization")],
            [("Charles Babbage", "Person"), ("Analytical Engine", "Product")],
        ],
    ).graph
    first = ALPHA.chunks[0].text
    return DocumentGraph(ALPHA.key, 1, graph, (0, 1), ((Span(start=0, end=len(first)),), ()))


async def entities(store: GraphStore) -> dict[str, str]:
    rows = await store.cypher_query("MATCH (e:Entity) RETURN e.id AS id, e.label AS label", {})
    return {r["id"]: r["label"] for r in rows}


@covers("found_documents")
async def test_only_documents_whose_every_passage_kept_its_found_names_are_read(store: GraphStore) -> None:
    await store.write_versions([ALPHA.model_copy(update={"found": FOUND}), BETA])
    page = await store.found_documents(None, 10)
    assert page.next is None
    [doc] = page.documents
    assert (doc.key, doc.version, doc.title) == (ALPHA.key, 1, "Alpha")
    assert [(p.index, p.text, p.found) for p in doc.passages] == [
        (c.index, c.text, f) for c, f in zip(ALPHA.chunks, FOUND, strict=True)
    ]
    # paged by key: BETA (no found names) is skipped, and the pages still reach the end
    first = await store.found_documents(None, 1)
    assert [d.key for d in first.documents] == [ALPHA.key] and first.next == ALPHA.key
    second = await store.found_documents(first.next, 1)
    assert second.documents == [] and second.next == BETA.key
    assert (await store.found_documents(second.next, 1)).next is None


@covers("replace_graphs")
async def test_a_replaced_graph_keeps_passages_vectors_and_version(store: GraphStore) -> None:
    await store.write_versions([ALPHA.model_copy(update={"found": FOUND}), BETA])
    passages = [c.id for c in await store.document_passages(ALPHA.key)]
    await store.set_embedding_model("contract-test", 3)
    await store.write_embeddings([(passages[0], (1.0, 0.0, 0.0)), (passages[1], (0.0, 1.0, 0.0))])
    agent = ExtractedRelation(
        source=ADA, target=BABBAGE, type="KNEW", fact="Ada knew Babbage.", confidence=1.0, chunk_indexes=()
    )
    await store.upsert_relations([(agent, [passages[0]])], source="agent:test")

    assert await store.replace_graphs([retyped()]) == [ALPHA.key]

    labels = await entities(store)
    assert labels[LONDON_ORG] == "Organization"
    assert LONDON not in labels  # no passage mentions the Location any more: it went
    assert labels[ADA] == labels[BABBAGE] == "Person"
    assert [c.id for c in await store.document_passages(ALPHA.key)] == passages
    assert (await store.get_documents([ALPHA.key]))[ALPHA.key].version == 1
    assert [cid for cid, _ in await store.pending_embeddings(10)] == [
        c.id for c in await store.document_passages(BETA.key)
    ]
    around = {(n.source, n.target, n.type): n for n in await store.neighbours([BABBAGE], 1, 50)}
    assert (BABBAGE, LONDON_ORG, "RELATED_TO") in around and (BABBAGE, LONDON, "RELATED_TO") not in around
    assert around[(ADA, BABBAGE, "RELATED_TO")].source_passages == [passages[0]]
    knew = {n.type: n for n in await store.neighbours([ADA], 1, 50)}["KNEW"]
    assert knew.source_passages == [passages[0]]  # the agent's relation keeps its evidence
    sentences = [t for t in await store.pending_ranking_texts(50) if t.kind == "sentences"]
    assert [t.id for t in sentences] == [passages[0]]  # the changed sentences wait for vectors
    assert sorted(e for c, e in await store.entities_for_passages(passages[:1])) == sorted([ADA, BABBAGE, LONDON_ORG])


@covers("replace_graphs")
async def test_the_same_graph_or_a_moved_on_version_changes_nothing(store: GraphStore) -> None:
    await store.write_versions([ALPHA.model_copy(update={"found": FOUND})])
    same = DocumentGraph(ALPHA.key, 1, ALPHA.graph, (0, 1), ((), ()))
    assert await store.replace_graphs([same]) == []
    generation = await store.write_generation()
    stale = retyped()
    assert await store.replace_graphs([DocumentGraph(stale.key, 2, stale.graph, stale.indexes, stale.sentences)]) == []
    assert await store.write_generation() == generation
    assert LONDON in await entities(store)
    assert await store.replace_graphs([]) == []
