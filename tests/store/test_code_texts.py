"""Both stores read code symbols' full-text column through one `read_code_texts`, under the name
`TEXT_INDEXES` saves the code index as."""

from __future__ import annotations

from typing import Any

from evigraph.code_records import SYMBOL_KINDS
from evigraph.store.core.code_rows import read_code_texts
from evigraph.store.embedded import code as embedded_code
from evigraph.store.falkordb import code as falkordb_code
from evigraph.store.saved_indexes import TEXT_INDEXES


def test_every_symbol_kind_is_read_and_a_missing_text_is_empty() -> None:
    asked: list[str] = []

    def rows(query: str) -> list[dict[str, Any]]:
        asked.append(query)
        kind = query.split(":", 1)[1].split(")", 1)[0]
        return [{"id": f"{kind}:a", "st": "alpha"}, {"id": f"{kind}:b", "st": None}]

    found = read_code_texts(rows)
    assert len(asked) == len(SYMBOL_KINDS)
    assert found == [pair for kind in SYMBOL_KINDS for pair in ((f"{kind}:a", "alpha"), (f"{kind}:b", ""))]


def test_each_store_names_its_reader_as_the_saved_index_does() -> None:
    for store_code in (embedded_code, falkordb_code):
        assert TEXT_INDEXES[store_code.code_texts.__name__] == "code_bm25"
