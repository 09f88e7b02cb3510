"""The merge half of the store contract: resolution at finalize folds entities and remembers it."""

from __future__ import annotations

from tests.store.contract.conftest import StoreFactory, covers, eid

from evigraph.models import (
    DocumentVersion,
    ExtractedEntity,
    ExtractedRelation,
    GraphData,
    Mention,
    Span,
    TextChunk,
)
from evigraph.store import GraphStore
from evigraph.store.merging import EntityMerge

JOHN, JSMITH, ADA, LONDON = (
    eid("John Smith", "Person"),
    eid("J. Smith", "Person"),
    eid("Ada Lovelace", "Person"),
    eid("London", "Location"),
)


def doc(key: str, text: str, names: list[tuple[str, str]], relations: list[tuple[str, str, str]]) -> DocumentVersion:
    """One passage naming `names` (each found in `text`), with `relations` (source, target, fact)."""
    entities = {e.id: e for e in (ExtractedEntity.create(n, label) for n, label in names)}
    mentions = []
    for name, label in names:
        at = text.index(name)
        span = Span(start=at, end=at + len(name))
        mentions.append(Mention(entity_id=eid(name, label), chunk_index=0, spans=(span,)))
    rels = [ExtractedRelation(source=s, target=t, fact=f, confidence=0.5, chunk_indexes=(0,)) for s, t, f in relations]
    return DocumentVersion(
        key=key,
        title=key,
        path=None,
        content_hash=key + text,
        loader="text",
        chunks=(TextChunk(index=0, text=text, start=0, end=len(text)),),
        graph=GraphData(entities=tuple(entities.values()), relations=tuple(rels), mentions=tuple(mentions)),
    )


FACT = "Smith worked with Ada Lovelace."
A = doc(
    "a",
    "John Smith worked with Ada Lovelace in London.",
    [("John Smith", "Person"), ("Ada Lovelace", "Person"), ("London", "Location")],
    [(JOHN, ADA, FACT), (ADA, LONDON, "Ada Lovelace lived in London.")],
)
B = doc(
    "b",
    "J. Smith worked with Ada Lovelace; John Smith is J. Smith.",
    [("J. Smith", "Person"), ("Ada Lovelace", "Person"), ("John Smith", "Person")],
    [(JSMITH, ADA, FACT), (JSMITH, JOHN, "John Smith is J. Smith."), (ADA, JSMITH, "Ada Lovelace knew J. Smith.")],
)


async def chunk_of(store: GraphStore, key: str) -> str:
    return (await store.document_passages(key))[0].id


@covers("merge_entities", "entity_records", "entity_redirects")
async def test_a_merge_keeps_aliases_mentions_and_relations(store: GraphStore) -> None:
    await store.write_versions([A, B])
    a, b = await chunk_of(store, "a"), await chunk_of(store, "b")
    records = {r.id: r for r in await store.entity_records()}
    assert [r.id for r in await store.entity_records()] == sorted(records)
    assert (records[JOHN].mentions, records[JSMITH].mentions, records[ADA].mentions) == (2, 1, 2)
    assert records[JSMITH].name == "J. Smith" and records[JSMITH].label == "Person"
    assert await store.entity_redirects() == {}

    outcome = await store.merge_entities([EntityMerge(survivor=JOHN, merged=(JSMITH,))])

    assert (outcome.merged, outcome.skipped) == (1, ())
    assert (outcome.mentions_moved, outcome.mentions_folded) == (0, 1)  # John was named in b already
    # J->Ada lands on John->Ada with the same fact: folded; J->John would be John->John: dropped;
    # Ada->J is re-pointed at John.
    assert (outcome.relations_moved, outcome.relations_folded) == (1, 2)
    assert await store.entities_by_ids([JSMITH]) == []
    assert await store.entity_redirects() == {JSMITH: JOHN}
    assert await store.entities_named(["j. smith"]) == {"j. smith": [JOHN]}  # the old spelling finds the survivor
    survivor = {r.id: r for r in await store.entity_records()}[JOHN]
    assert "J. Smith" in survivor.aliases and "John Smith" in survivor.aliases
    assert survivor.mentions == 2
    assert sorted(c for _, c in await store.passages_for_entities([JOHN], per_entity=5)) == sorted([a, b])
    spans = {r.chunk: [m for m in r.mentions if m[0] == JOHN] for r in await store.ranking_rows()}
    assert [s for _, _, s in spans[b]] == [(0, 35)]  # both spellings' spans, in one mention
    rels = {(r.source, r.target, r.fact): r for r in await store.neighbours([JOHN], hops=1)}
    assert sorted(rels[(JOHN, ADA, FACT)].source_passages) == sorted([a, b])
    assert (ADA, JOHN, "Ada Lovelace knew J. Smith.") in rels
    assert all(JSMITH not in (s, t) and s != t for s, t, _ in rels)
    counts = await store.counts()
    assert (counts.entities, counts.relations, counts.mentions) == (3, 3, 5)
    assert (await store.check()).found == []


@covers("merge_entities", "write_versions", "upsert_entities", "upsert_relations")
async def test_later_writes_naming_the_merged_away_spelling_attach_to_the_survivor(
    factory: StoreFactory, location: str
) -> None:
    async with factory.connect(location) as store:
        await store.write_versions([A, B])
        await store.merge_entities([EntityMerge(survivor=JOHN, merged=(JSMITH,))])
    async with factory.connect(location) as store:  # recorded in the file, not in the process
        c = doc("c", "J. Smith visited London.", [("J. Smith", "Person"), ("London", "Location")], [])
        c = c.model_copy(
            update={
                "graph": c.graph.model_copy(
                    update={
                        "relations": (
                            ExtractedRelation(
                                source=JSMITH, target=LONDON, fact=c.chunks[0].text, confidence=0.7, chunk_indexes=(0,)
                            ),
                        )
                    }
                )
            }
        )
        await store.write_versions([c])
        cid = await chunk_of(store, "c")
        assert await store.entities_by_ids([JSMITH]) == []
        assert (JOHN, cid) in await store.passages_for_entities([JOHN], per_entity=5)
        assert [(r.source, r.target) for r in await store.relations_for_passages([cid])] == [(JOHN, LONDON)]
        await store.upsert_entities([ExtractedEntity.create("J. Smith", "Person", "a clerk")], source="agent:test")
        assert await store.entities_by_ids([JSMITH]) == []
        assert "a clerk" in (await store.entities_by_ids([JOHN]))[0].description
        fact = "J. Smith met Ada."
        rel = ExtractedRelation(source=ADA, target=JSMITH, fact=fact, confidence=0.9, chunk_indexes=())
        await store.upsert_relations([(rel, [cid])], source="agent:test")
        assert any(r.fact == fact and r.target == JOHN for r in await store.neighbours([ADA]))
        assert (await store.counts()).entities == 3


@covers("merge_entities", "entity_redirects")
async def test_redirects_stay_flat_and_gone_entities_are_skipped(store: GraphStore) -> None:
    await store.write_versions([A, B])
    await store.merge_entities([EntityMerge(survivor=JSMITH, merged=(JOHN,))])
    assert await store.entity_redirects() == {JOHN: JSMITH}
    outcome = await store.merge_entities(
        [EntityMerge(survivor=ADA, merged=(JSMITH,)), EntityMerge(survivor=LONDON, merged=(JOHN,))]
    )
    assert (outcome.merged, outcome.skipped) == (1, (LONDON,))  # John is gone already
    assert await store.entity_redirects() == {JOHN: ADA, JSMITH: ADA}
    assert await store.merge_entities([]) == type(outcome)()
