"""Sources appended to existing relations in statements bounded by values (`value_batches`):
every relation a later document states again lists every passage that states it, however the
rows were cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.store.embedded import writes
from evigraph.store.embedded.executor import value_batches

FACT = (
    "Ada Lovelace worked with Charles Babbage in London. Mary Somerville introduced Ada Lovelace "
    "to Charles Babbage at the Royal Society."
)


@pytest.mark.parametrize("most_rows", [2, None], ids=["2 rows a statement", "the bound"])
async def test_every_restated_relation_lists_every_passage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, most_rows: int | None
) -> None:
    if most_rows is not None:
        monkeypatch.setattr(writes, "value_batches", lambda rows, *_: value_batches(rows, most_rows))
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        for key in ("a", "b", "c"):  # one ingest each: b and c append to the relations a created
            assert (await kb.ingest(text=f"{FACT} Record {key}.", key=key)).ok
        assert kb.store is not None
        rows = await kb.store.cypher_query(
            "MATCH ()-[r:RELATES]->() RETURN r.id AS id, size(string_split(r.source_chunks, ' ')) AS n"
        )
    assert len(rows) > 2  # more rows than one statement of 2 takes
    assert {r["n"] for r in rows} == {3}
