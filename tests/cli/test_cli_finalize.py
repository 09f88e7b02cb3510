"""`evigraph finalize --resolver`: duplicates merged across the graph, said in text and JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli


@pytest.mark.slow
def test_finalize_resolves_with_the_resolver_named_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Marta Oliveira founded Harbor Lab in Lisbon. She hired Ana Costa.", encoding="utf-8")
    (docs / "b.txt").write_text("Marta Olivera visited Lisbon. Ana Costa met Rui Pinto.", encoding="utf-8")
    db = str(tmp_path / "kb.db")
    assert run_cli("ingest", str(docs), "--db", db, "--quiet", "--extractor", "rules").code == 0

    bad = run_cli("finalize", "--db", db, "--resolver", "sloppy")
    assert bad.code == 2
    assert "invalid choice: 'sloppy'" in bad.err and "'exact', 'fuzzy', 'llm'" in bad.err

    text = run_cli("finalize", "--db", db, "--resolver", "fuzzy")
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[1].startswith("resolved with fuzzy: ") and "1 entities merged" in lines[1]
    assert lines[2] == "  Marta Oliveira <- Marta Olivera"

    again = run_cli("finalize", "--db", db, "--resolver", "fuzzy", "--json")
    assert again.code == 0, again.err
    resolution = again.json()["resolution"]
    assert (resolution["resolver"], resolution["merged"], resolution["candidates"]) == ("fuzzy", 0, 0)

    plain = run_cli("finalize", "--db", db)  # exact, the default: no resolution line
    assert plain.code == 0 and len(plain.out.splitlines()) == 1
