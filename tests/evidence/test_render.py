"""What a reply shows besides passages: only lines that add to them."""

from __future__ import annotations

from evigraph.evidence.items import EntityItem, PassageItem, RelationItem, Source
from evigraph.evidence.pack import pack_sections
from evigraph.evidence.render import evidence_sections


def passage(pid: str, text: str, n: int) -> PassageItem:
    return PassageItem(id=pid, n=n, text=text, source=Source(document_key="d", title="T"))


def relation(rid: str, rtype: str, passages: list[str], n: int) -> RelationItem:
    return RelationItem(
        id=rid,
        n=n,
        source="Ada",
        type=rtype,
        target="Babbage",
        fact="Ada worked with Babbage.",
        confidence=1.0,
        passages=passages,
    )


def test_only_lines_that_add_to_the_passages_are_shown() -> None:
    passages = [passage("p1", "Ada worked with Babbage on the engine.", 1), passage("p2", "Ada wrote notes.", 2)]
    entities = [
        EntityItem(id="e1", n=3, name="Babbage", label="Person"),  # named by one shown passage only: repeats it
        EntityItem(id="e2", n=4, name="Ada", label="Person"),  # named by both: links them
        EntityItem(id="e3", n=5, name="Menabrea", label="Person"),  # named by none: says where else to look
        EntityItem(id="e4", n=6, name="Engine", label="Product", description="the Analytical Engine"),
    ]
    relations = [
        relation("r1", "RELATED_TO", ["p1"], 7),  # co-occurrence stated by a shown passage
        relation("r2", "WORKED_WITH", ["p1"], 8),  # a typed claim
        relation("r3", "RELATED_TO", ["p9"], 9),  # from a passage not shown
    ]
    facts = [relation("r2", "WORKED_WITH", ["p1"], 8), relation("r4", "COLLABORATED", ["p2"], 10)]
    text = pack_sections(evidence_sections(passages, entities, relations, facts), 10_000, len)
    shown = {line.split("]")[0] + "]" for line in text.splitlines() if line.startswith("[")}
    assert shown == {"[1]", "[2]", "[4]", "[5]", "[6]", "[8]", "[9]", "[10]"}
    assert text.count("[8]") == 1  # a relation that is also a fact is shown once


def test_passages_are_whole_before_anything_else_prints() -> None:
    passages = [passage(f"p{i}", "word " * 60, i) for i in range(1, 6)]
    entities = [EntityItem(id="e", n=9, name="Zed", label="Person", description="unrelated")]
    roomy = pack_sections(evidence_sections(passages, entities), 5_000, len)
    assert "## Entities" in roomy and "omitted" not in roomy
    tight = pack_sections(evidence_sections(passages, entities), 900, len)
    assert len(tight) <= 900 and "more omitted" in tight and "## Entities" not in tight
