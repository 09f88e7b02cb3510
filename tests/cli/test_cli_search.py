"""`evigraph search` end to end: cited context, typed JSON, clear errors."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def test_search_prints_cited_context_and_json(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    assert run_cli("ingest", str(corpus), "--db", str(db), "-q").code == 0
    text = run_cli("search", "Who leads ReefWatch?", "--db", str(db), "--top-k", "3", "--max-tokens", "400")
    assert text.code == 0, text.err
    assert text.out.startswith("## Passages\n[1] ")
    assert "Ana Costa leads ReefWatch" in text.out
    typed = run_cli("search", "Who leads ReefWatch?", "--db", str(db), "--json", "--paths", "passages")
    assert typed.code == 0, typed.err
    result = typed.json()
    assert result["entities"] == [] and result["paths"] == ["passages"]
    top = result["passages"][0]
    assert top["n"] == 1 and top["source"]["document_key"].endswith("reefwatch.md") and top["source"]["title"]


def test_search_errors_name_the_fix(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    missing = run_cli("search", "anything", "--db", str(db))
    assert missing.code == 1 and "no knowledge base" in missing.err and not db.exists()
    assert run_cli("ingest", str(corpus / "lisbon.txt"), "--db", str(db), "-q", "--extractor", "rules").code == 0
    bad = run_cli("search", "Lisbon", "--db", str(db), "--paths", "teleport")
    assert bad.code == 1 and "choose from passages" in bad.err
    hops = run_cli("search", "Lisbon", "--db", str(db), "--hops", "9")  # the old flag, kept for one release
    assert hops.code == 1 and "invalid retrieve options: --expand-hops:" in hops.err  # the flag, not expand_hops=
    assert "--expand-hops: 1-5" in hops.err and "--top-k: 1-50" in hops.err and "expand_hops" not in hops.err
    again = run_cli("search", "Lisbon", "--db", str(db), "--expand-hops", "9")
    assert again.code == 1 and again.err == hops.err
    budget = run_cli("search", "Lisbon", "--db", str(db), "--max-tokens", "0")
    assert budget.code == 1 and "max_tokens must be positive" in budget.err and "Traceback" not in budget.err


def test_search_options_are_the_retrieve_query_fields() -> None:
    """The CLI, the tool and the Python method share one declaration, so defaults cannot drift."""
    from evigraph.cli.parser import build_parser
    from evigraph.retrieval.query import RetrieveInput
    from evigraph.tools.registry import load_tools

    args = build_parser().parse_args(["search", "q"])
    schema = load_tools()["retrieve"].input.model_json_schema()["properties"]
    for name in ("top_k", "expand_hops"):
        default = RetrieveInput.model_fields[name].default
        assert getattr(args, name) == default == schema[name]["default"]
    assert build_parser().parse_args(["search", "q", "--hops", "3"]).expand_hops == 3
    assert load_tools()["retrieve"].input is RetrieveInput
