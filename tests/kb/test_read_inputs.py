"""Bad arguments to the knowledge base's reads are refused with the fix, never run as something else.

The tools validate through their input models; Python callers reach these methods directly, so
a misspelt mode or relation must not quietly run the default branch and look like "no match".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evigraph import ConfigurationError, KnowledgeBase


@pytest.fixture
async def kb(tmp_path: Path) -> Any:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest(
            text="# Harbor Lab\n\nAna Costa leads ReefWatch.\n\n## Funding\n\nReefWatch got money.", key="lab"
        )
        yield kb


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda kb: kb.search_passages("ReefWatch", mode="semantik"), "mode='semantik' is not one of"),
        (lambda kb: kb.search_entities("ReefWatch", mode="fuzzy"), "mode='fuzzy' is not one of"),
        (lambda kb: kb.search_passages("ReefWatch", limit=0), "limit must be an integer of at least 1"),
        (lambda kb: kb.read_passages(["x"], max_chars=-5), "max_chars must be"),
        (lambda kb: kb.explore_relationships("ReefWatch", depth=0), "depth must be"),
        (lambda kb: kb.search_themes("ReefWatch", support_limit=0), "support_limit must be"),
        (lambda kb: kb.cypher_query("MATCH (d:Document) RETURN d.key", limit=True), "limit must be"),
    ],
)
async def test_bad_read_arguments_name_the_fix(kb: KnowledgeBase, call: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as info:
        await call(kb)
    assert info.value.hint


async def test_a_misspelt_relation_is_refused_not_walked_as_another(kb: KnowledgeBase) -> None:
    passage = (await kb.search_passages("ReefWatch money", mode="lexical")).hits[0].id
    with pytest.raises(ConfigurationError, match="relation='sibling' is not one of") as info:
        await kb.navigate_document(passage, "sibling")  # type: ignore[arg-type]
    assert "parent" in str(info.value)
    assert (await kb.navigate_document(passage, "parent")).relation == "parent"
