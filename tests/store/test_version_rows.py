"""Document versions become the rows both stores write: an entity or relation met many times in
one write group is one row gathering every distinct description, alias and source, first seen first."""

from __future__ import annotations

from datetime import UTC, datetime

from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, GraphData, Mention, TextChunk
from evigraph.store.core.version_rows import Folded, add_entity, add_relation, chunk_id, version_rows


def _version(key: str, description: str, alias: str) -> DocumentVersion:
    ada = ExtractedEntity(
        id="person:ada", name="Ada", label="Person", descriptions=(description, description), aliases=("Ada", alias)
    )
    london = ExtractedEntity(id="place:london", name="London", label="Place")
    met = ExtractedRelation(
        source="person:ada", target="place:london", fact="Ada lived in London.", confidence=0.5, chunk_indexes=(0, 1, 0)
    )
    text = "Ada lived in London."
    return DocumentVersion(
        key=key,
        title=key,
        path=None,
        content_hash=key,
        loader="text",
        chunks=(TextChunk(index=0, text=text, start=0, end=20), TextChunk(index=1, text=text, start=21, end=41)),
        graph=GraphData(
            entities=(ada, london),
            relations=(met,),
            mentions=(Mention(entity_id="person:ada", chunk_index=0), Mention(entity_id="place:london", chunk_index=1)),
        ),
    )


def test_an_entity_and_a_relation_met_in_every_version_are_one_row_each() -> None:
    versions = [_version(f"d{i}", f"note {i % 3}", f"A{i % 2}") for i in range(30)]
    rows = version_rows(versions, {v.key: 1 for v in versions}, datetime.now(UTC))
    assert list(rows.entities) == ["person:ada", "place:london"]
    ada = rows.entities["person:ada"]
    assert ada["descs"] == ["note 0", "note 1", "note 2"]  # distinct, in the order first met
    assert ada["aliases"] == ["Ada", "A0", "A1"]
    assert rows.entities["place:london"]["descs"] == []
    (relation,) = rows.relations.values()
    expected = [chunk_id(f"d{i}", 1, j) for i in range(30) for j in (0, 1)]
    assert relation["src"] == expected  # every passage once, in order
    assert len(rows.chunks) == 60 and len(rows.mentions) == 60


def test_folding_keeps_the_highest_confidence_and_rows_made_before() -> None:
    rows = Folded()
    rows["r"] = {"id": "r", "src": ["c1", "c2"]}  # a row holding sources already
    rows.gather("r", "src", ["c2", "c3", "c3", "c1", "c4"])
    assert rows["r"]["src"] == ["c1", "c2", "c3", "c4"]

    relations = Folded()
    low = ExtractedRelation(source="a", target="b", fact="A knows B.", confidence=0.3, chunk_indexes=(0,))
    add_relation(relations, low, ["c1", "c1"])
    add_relation(relations, low.model_copy(update={"confidence": 0.9}), ["c2"])
    add_relation(relations, low, ["c1"])
    (row,) = relations.values()
    assert row["conf"] == 0.9 and row["src"] == ["c1", "c2"]

    entities = Folded()
    add_entity(entities, ExtractedEntity(id="x", name="X", label="Thing", aliases=("X", "X")))
    add_entity(entities, ExtractedEntity(id="x", name="X", label="Thing", descriptions=("d",), aliases=("Ex",)))
    assert entities["x"]["aliases"] == ["X", "Ex"] and entities["x"]["descs"] == ["d"]
