"""`evigraph cypher` (and `cypher_query`, the tool's name): read-only Cypher on the file, with the
tool's guard and bounds, tab-separated rows or JSON, and clear refusals of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import run_cli

DOC = "Ada Lovelace wrote the first program for the Analytical Engine, designed by Charles Babbage in London."


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cypher")
    (folder / "ada.txt").write_text(DOC, encoding="utf-8")
    db = folder / "kb.db"
    made = run_cli("ingest", str(folder / "ada.txt"), "--db", str(db), "-q", "--extractor", "rules")
    assert made.code == 0, made.err
    return db


def test_rows_as_tab_separated_columns(db: Path) -> None:
    query = "MATCH (d:Document) RETURN d.key AS key, 'a\tb' AS tabbed, 2 AS n"
    found = run_cli("cypher", query, "--db", str(db))
    assert found.code == 0, found.err
    header, row = found.out.splitlines()
    assert header == "key\ttabbed\tn"
    key, tabbed, n = row.split("\t")
    assert key.endswith("ada.txt") and tabbed == "a b" and n == "2"


def test_the_tool_name_and_json_and_the_limit(db: Path) -> None:
    found = run_cli("cypher_query", "MATCH (p:Chunk) RETURN p.id AS id", "--db", str(db), "--limit", "1", "--json")
    assert found.code == 0, found.err
    rows = json.loads(found.out)
    assert rows["columns"] == ["id"] and len(rows["rows"]) == 1
    all_rows = run_cli("cypher", "MATCH (e:Entity) RETURN e.name AS name", "--db", str(db), "--json")
    names = {r["name"] for r in json.loads(all_rows.out)["rows"]}
    assert {"Ada Lovelace", "Charles Babbage"} <= names
    cut = run_cli("cypher", "MATCH (e:Entity) RETURN e.name AS name", "--db", str(db), "--limit", "1")
    assert cut.code == 0 and len(cut.out.splitlines()) == 2 and "cut at 1 rows" in cut.err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["MATCH (e:Entity) SET e.name = 'x' RETURN e"], "refused"),
        (["MATCH (e:Entity RETURN e"], "error"),
        (["MATCH (n) RETURN n", "--params", "{not json"], "--params is not JSON"),
        (["MATCH (n) RETURN n", "--params", "[1, 2]"], "--params must be a JSON object"),
        (["MATCH (n) RETURN n", "--limit", "0"], "--limit: Input should be greater than or equal to 1"),
        (["MATCH (n) RETURN n", "--limit", "5000"], "--limit: Input should be less than or equal to 1000"),
        (["   "], "the query is empty"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(db: Path, args: list[str], expected: str) -> None:
    count = "MATCH (e:Entity) RETURN count(e) AS n"
    before = json.loads(run_cli("cypher", count, "--db", str(db), "--json").out)["rows"]
    refused = run_cli("cypher", *args, "--db", str(db))
    assert refused.code == 1, refused.out
    assert refused.err.startswith("error: ") and expected in refused.err
    assert json.loads(run_cli("cypher", count, "--db", str(db), "--json").out)["rows"] == before


def test_no_knowledge_base_names_the_fix(tmp_path: Path) -> None:
    missing = run_cli("cypher", "MATCH (n) RETURN n", "--db", str(tmp_path / "none.db"))
    assert missing.code == 1 and "evigraph ingest" in missing.err
    assert not (tmp_path / "none.db").exists()
