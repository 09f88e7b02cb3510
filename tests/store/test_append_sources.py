"""Sources appended to existing relations in statements of `APPEND_BATCH` rows: every relation a
later document states again lists every passage that states it, however the rows were cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.store.embedded import writes

FACT = (
    "Ada Lovelace worked with Charles Babbage in London. Mary Somerville introduced Ada Lovelace "
    "to Charles Babbage at the Royal Society."
)


@pytest.mark.parametrize("batch", [2, writes.APPEND_BATCH])
async def test_every_restated_relation_lists_every_passage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(writes, "APPEND_BATCH", batch)
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        for key in ("a", "b", "c"):  # one ingest each: b and c append to the relations a created
            assert (await kb.ingest(text=f"{FACT} Record {key}.", key=key)).ok
        assert kb.store is not None
        rows = await kb.store.query(
            "MATCH ()-[r:RELATES]->() RETURN r.id AS id, size(string_split(r.source_chunks, ' ')) AS n"
        )
    assert len(rows) > 2  # more rows than one statement of 2 takes
    assert {r["n"] for r in rows} == {3}
