"""Every read tool driven through `Toolkit.call` on a real, finalized corpus.

Covers numbering within and across sessions, citation checking on real evidence, the passage,
graph, theme and Cypher tools, source status, argument bounds, and a knowledge base that was
never written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.conftest import (
    ACME_LOADED,
    GLOBEX,
    PRODUCTS_PARAGRAPH,
    HashEmbedder,
    passage_number,
    run,
)

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.evidence.items import EntityItem
from evigraph.evidence.render import entity_adds
from evigraph.models import SourceState
from evigraph.providers.tokenizers import default_tokenizer
from evigraph.tools.citation_tools import CitationResult
from evigraph.tools.graph_tools import (
    CypherResult,
    EntitySearchResult,
    ExplorationResult,
    OntologyResult,
    StatusResult,
    ThemeSearchResult,
)
from evigraph.tools.passage_tools import (
    NavigationResult,
    PassageReadResult,
    PassageSearchResult,
    RetrieveResult,
)
from evigraph.tools.session_tools import ContextResult, SourceStatusResult

FOUNDING = "Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 with Lars Berg."


async def founding_passage(tk: Toolkit) -> int:
    n, _ = await passage_number(tk, "founded Acme Robotics", FOUNDING)
    return n


async def check(tk: Toolkit, answer: str) -> CitationResult:
    return await run(tk, "check_citations", {"answer": answer}, CitationResult)


# --- numbering -----------------------------------------------------------------------------


async def test_numbering_continues_across_calls_and_keeps_numbers_of_known_evidence(tk: Toolkit) -> None:
    first = await run(tk, "retrieve", {"question": "Who founded Acme Robotics Corp?", "top_k": 2}, RetrieveResult)
    numbers = {p.evidence_id: p.n for p in first.passages} | {e.evidence_id: e.n for e in first.entities}
    numbers |= {r.evidence_id: r.n for r in [*first.relations, *first.facts]}
    assert first.passages and first.entities
    assert all(n > 0 for n in numbers.values())
    assert len(set(numbers.values())) == len(numbers), "two pieces of evidence share a number"
    assert min(numbers.values()) == 1

    second = await run(
        tk,
        "search_passages",
        {"query": "Acme Robotics Corp Lars Berg Lifter Hawk", "mode": "lexical"},
        PassageSearchResult,
    )
    assert second.hits
    seen_again = [h for h in second.hits if h.evidence_id in numbers]
    new = [h for h in second.hits if h.evidence_id not in numbers]
    assert seen_again and new, "the test needs both known and new passages"
    for h in seen_again:
        assert h.n == numbers[h.evidence_id]
    assert min(h.n for h in new) > max(numbers.values())


async def test_new_session_restarts_numbering_and_does_not_accept_the_old_numbers(tk: Toolkit) -> None:
    await run(tk, "status", {}, StatusResult)
    n = await founding_passage(tk)
    assert n > 1
    assert (await check(tk, f"Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 [{n}].")).grounded

    other = tk.new_session()
    assert other.kb is tk.kb and other.ledger is not tk.ledger
    stale = await check(other, f"Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 [{n}].")
    assert not stale.grounded
    assert stale.invalid == [n] and stale.cited == []
    fresh = await run(other, "status", {}, StatusResult)
    assert fresh.n == 1
    # the first session is untouched by the second
    assert (await check(tk, f"Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 [{n}].")).grounded


async def test_tool_methods_share_the_session_numbering(tk: Toolkit) -> None:
    by_call = await run(tk, "status", {}, StatusResult)
    by_method = await tk.status()
    assert isinstance(by_method, StatusResult)
    assert by_method.n == by_call.n == 1


# --- check_citations ------------------------------------------------------------------------


async def test_check_citations_grounded_draft(tk: Toolkit) -> None:
    n = await founding_passage(tk)
    result = await check(tk, f"Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 [{n}].")
    assert result.grounded
    assert result.cited == [n]
    assert (result.invalid, result.uncited, result.unsupported) == ([], [], [])
    assert result.sources[0]["n"] == n and result.sources[0]["tool"] == "search_passages"
    assert FOUNDING in result.sources[0]["content"]
    assert result.to_llm_text().startswith("grounded")


async def test_check_citations_invalid_number_is_removed_and_not_grounded(tk: Toolkit) -> None:
    n = await founding_passage(tk)
    answer = f"Dr. Ingrid Halvorsen founded Acme Robotics Corp [{n}]. Lars Berg designed the Hawk drone [999]."
    result = await check(tk, answer)
    assert not result.grounded
    assert result.invalid == [999]
    assert result.cited == [n]
    assert "[999]" not in result.answer
    assert result.answer == f"Dr. Ingrid Halvorsen founded Acme Robotics Corp [{n}]. Lars Berg designed the Hawk drone."
    assert "invalid [999]" in result.to_llm_text()


async def test_check_citations_flags_an_uncited_sentence_with_a_figure_and_a_name(tk: Toolkit) -> None:
    n = await founding_passage(tk)
    result = await check(
        tk,
        f"Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 [{n}]. "
        "Globex Company reported revenue of 4.5 million euros.",
    )
    assert result.grounded, "claim warnings never change grounded"
    assert result.uncited == ["Globex Company reported revenue of 4.5 million euros."]


async def test_check_citations_flags_a_figure_and_a_name_the_evidence_lacks(tk: Toolkit) -> None:
    n = await founding_passage(tk)
    result = await check(tk, f"Prof. Hank Scorpio founded Acme Robotics Corp in 2012 [{n}].")
    assert result.grounded
    [flagged] = result.unsupported
    assert flagged["sentence"] == f"Prof. Hank Scorpio founded Acme Robotics Corp in 2012 [{n}]."
    assert "2012" in flagged["missing"]
    assert any("Hank Scorpio" in m for m in flagged["missing"])
    assert "Acme Robotics Corp" not in flagged["missing"]


async def test_check_citations_answer_citing_nothing_is_not_grounded(tk: Toolkit) -> None:
    await founding_passage(tk)
    result = await check(tk, "Acme Robotics Corp builds warehouse machines in Oslo.")
    assert not result.grounded
    assert result.cited == [] and result.invalid == []
    assert result.hint


async def test_check_citations_gap_statement_needs_no_citation(tk: Toolkit) -> None:
    n = await founding_passage(tk)
    result = await check(
        tk, f"Dr. Ingrid Halvorsen founded Acme Robotics Corp [{n}]. The graph does not say who founded Globex Company."
    )
    assert result.grounded
    assert result.uncited == []


async def test_check_citations_range_and_list_markers(tk: Toolkit) -> None:
    found = await run(
        tk, "retrieve", {"question": "Who founded Acme Robotics Corp?", "paths": ["passages"]}, RetrieveResult
    )
    assert [p.n for p in found.passages][:3] == [1, 2, 3]
    ranged = await check(tk, "Acme Robotics Corp builds warehouse machines [1-3].")
    assert ranged.grounded and ranged.cited == [1, 2, 3] and ranged.invalid == []
    listed = await check(tk, "Acme Robotics Corp builds warehouse machines [1, 2].")
    assert listed.grounded and listed.cited == [1, 2]
    past_the_end = len(found.passages) + 1
    mixed = await check(tk, f"Acme Robotics Corp builds warehouse machines [2-{past_the_end}].")
    assert mixed.invalid == [past_the_end]
    assert mixed.cited == list(range(2, past_the_end))


# --- status and get_ontology ----------------------------------------------------------------


async def test_status_is_one_citable_number(tk: Toolkit) -> None:
    st = await run(tk, "status", {}, StatusResult)
    assert (st.documents, st.passages) == (2, 7)
    assert st.entities > 0 and st.relations > 0 and st.themes > 0
    assert st.labels["Person"] >= 2 and "RELATED_TO" in st.relation_types
    assert st.embedding_model is None
    assert st.n == 1 and st.evidence_id.startswith("status:")
    assert st.to_llm_text().startswith("[1] Knowledge base: documents: 2, passages: 7")
    again = await run(tk, "status", {}, StatusResult)
    assert again.n == st.n, "the same status is the same evidence"
    cited = await check(tk, f"The knowledge base holds 2 documents and 7 passages [{st.n}].")
    assert cited.grounded and cited.unsupported == []
    assert cited.sources[0]["kind"] == "status"


async def test_get_ontology_is_one_citable_number_with_tables_and_no_internal_properties(tk: Toolkit) -> None:
    onto = await run(tk, "get_ontology", {}, OntologyResult)
    assert onto.n == 1 and onto.evidence_id.startswith("ontology:")
    labels = {e.label: e for e in onto.entity_types}
    assert labels["Person"].count >= 2 and labels["Person"].description
    assert {r.label for r in onto.relation_types} == {"RELATED_TO"}
    tables = {t.name: t for t in onto.tables}
    assert {"Chunk", "Document", "Entity", "RELATES", "MENTIONED_IN"} <= set(tables)
    assert {"id", "text", "document", "breadcrumbs"} <= set(tables["Chunk"].properties)
    assert {"id", "name", "label"} <= set(tables["Entity"].properties)
    assert tables["RELATES"].connects == [("Entity", "Entity")]
    for t in onto.tables:
        assert not {"embedding", "search_text"} & set(t.properties), t.name
    text = onto.to_llm_text(20_000)
    assert "embedding" not in text and "search_text" not in text
    assert text.startswith(f"[{onto.n}] Entity types:")
    cited = await check(tk, f"Person is a declared entity type [{onto.n}].")
    assert cited.grounded and cited.sources[0]["kind"] == "ontology"


# --- retrieve and passages -------------------------------------------------------------------


async def test_retrieve_numbers_passages_and_entities(tk: Toolkit) -> None:
    found = await run(tk, "retrieve", {"question": "Who founded Acme Robotics Corp?", "top_k": 5}, RetrieveResult)
    assert found.passages and found.entities
    assert any(FOUNDING in p.text for p in found.passages)
    assert any(e.name == "Acme Robotics Corp" for e in found.entities)
    assert len(found.passages) <= 5 and len(found.entities) <= 5
    items = [*found.passages, *found.entities]
    assert all(i.n > 0 and i.evidence_id for i in items)
    text = found.to_llm_text()
    shown = [p.text.casefold() for p in found.passages]
    for i in items:  # every passage; an entity only when it adds to them
        assert (f"[{i.n}]" in text) == (not isinstance(i, EntityItem) or entity_adds(i, shown))
    assert len(found.to_llm_text(600)) <= 600


async def test_retrieve_passages_path_only_returns_no_graph_items(tk: Toolkit) -> None:
    found = await run(
        tk, "retrieve", {"question": "Who founded Acme Robotics Corp?", "paths": ["passages"]}, RetrieveResult
    )
    assert found.paths == ["passages"]
    assert found.passages
    assert (found.entities, found.relations, found.facts) == ([], [], [])


async def test_search_passages_lexical(tk: Toolkit) -> None:
    found = await run(
        tk, "search_passages", {"query": "Hawk drone", "mode": "lexical", "limit": 2}, PassageSearchResult
    )
    assert 1 <= len(found.hits) <= 2
    assert found.hits[0].text.startswith("### Drones")
    assert found.hits[0].n > 0 and found.hits[0].paths == ["lexical"]
    long = await run(tk, "search_passages", {"query": "Narvik", "mode": "lexical"}, PassageSearchResult)
    products = next(h for h in long.hits if "depot" in h.text)
    assert products.partial and "Narvik" in products.text and len(products.text) < len(PRODUCTS_PARAGRAPH)


async def test_search_passages_semantic_without_embedder_is_an_error_with_a_hint(tk: Toolkit) -> None:
    with pytest.raises(ToolError) as err:
        await tk.call("search_passages", {"query": "Hawk drone", "mode": "semantic"})
    assert "semantic" in err.value.message
    assert "mode='lexical'" in err.value.hint
    hybrid = await run(tk, "search_passages", {"query": "Hawk drone"}, PassageSearchResult)
    assert hybrid.hits and hybrid.hint and "lexical only" in hybrid.hint


async def test_read_passages_by_number_and_by_evidence_id_give_the_exact_text(tk: Toolkit) -> None:
    n, chunk = await passage_number(tk, "Hawk drone", "The Hawk drone")
    read = await run(tk, "read_passages", {"passages": [n, f"passage:{chunk}", chunk]}, PassageReadResult)
    [p] = read.passages  # three references to one passage give it once
    assert p.n == n and p.id == chunk and not p.partial
    assert p.text == "### Drones\n\nThe Hawk drone counts stock from the air and was designed by Lars Berg."
    assert ACME_LOADED[p.source.start : p.source.end] == p.text
    assert p.citation.startswith("Acme Robotics, ")
    assert p.source.path is not None and p.source.path.endswith("acme.md")
    assert p.source.path in p.citation and f"chars {p.source.start}-{p.source.end}" in p.citation
    assert read.missing == []


async def test_read_passages_truncates_at_max_chars_and_lists_missing(tk: Toolkit) -> None:
    n, _ = await passage_number(tk, "Lifter depot", "Lifter line shipped 100 units")
    read = await run(
        tk, "read_passages", {"passages": [n, "passage:no-such-chunk"], "max_chars": 40}, PassageReadResult
    )
    [p] = read.passages
    assert p.partial and len(p.text) == 40 and PRODUCTS_PARAGRAPH.startswith(p.text.removeprefix("## Products\n\n"))
    assert read.missing == ["passage:no-such-chunk"]
    assert read.hint


async def test_read_passages_refuses_numbers_of_other_kinds_or_sessions(tk: Toolkit) -> None:
    st = await run(tk, "status", {}, StatusResult)
    with pytest.raises(ToolError, match="not a passage"):
        await tk.call("read_passages", {"passages": [st.n]})
    with pytest.raises(ToolError, match=r"\[77\] is not evidence of this session"):
        await tk.call("read_passages", {"passages": [77]})


async def test_read_passages_reads_the_good_references_and_reports_the_rest(tk: Toolkit) -> None:
    n, chunk = await passage_number(tk, "Lifter depot", "Lifter line shipped 100 units")
    st = await run(tk, "status", {}, StatusResult)
    read = await run(tk, "read_passages", {"passages": [n, 999, st.n, "passage:no-such-chunk"]}, PassageReadResult)
    assert [p.id for p in read.passages] == [chunk]
    assert read.missing == [
        "[999]: [999] is not evidence of this session",
        f"[{st.n}]: [{st.n}] is a status, not a passage",
        "passage:no-such-chunk",
    ]
    assert read.hint and "not passage evidence" in read.hint and "search again" in read.hint
    assert "[999]" in read.to_llm_text()


async def _navigate(tk: Toolkit, anchor: int, relation: str, **extra: Any) -> NavigationResult:
    return await run(tk, "navigate_document", {"passage": anchor, "relation": relation, **extra}, NavigationResult)


def _heads(result: NavigationResult) -> list[str]:
    return [p.text.split("\n", 1)[0] for p in result.items]


async def test_navigate_document_relations(tk: Toolkit) -> None:
    paragraph, _ = await passage_number(tk, "Lifter depot", "Lifter line shipped 100 units")
    table, _ = await passage_number(tk, "Picker Sorter Launched", "Product: Picker; Launched: 2022")
    robots, _ = await passage_number(tk, "pallets shelves", "The Lifter robot moves pallets")

    assert _heads(await _navigate(tk, robots, "parent")) == ["## Products"]
    assert _heads(await _navigate(tk, paragraph, "children")) == ["### Warehouse Robots", "### Drones"]
    assert _heads(await _navigate(tk, paragraph, "siblings")) == [TABLE_HEAD]
    assert _heads(await _navigate(tk, table, "previous")) == ["## Products", "# Acme Robotics"]
    assert _heads(await _navigate(tk, table, "next")) == ["### Warehouse Robots", "### Drones", "## People"]
    around = await _navigate(tk, table, "table_context")
    assert _heads(around) == ["## Products"]
    assert _heads(await _navigate(tk, paragraph, "table_context")) == [TABLE_HEAD]
    none = await _navigate(tk, robots, "children")
    assert none.items == [] and none.hint == "no children passage: try another relation"
    # results are numbered evidence too, and the same passage keeps its number
    assert around.items[0].n == paragraph
    assert around.anchor.startswith("passage:") and around.relation == "table_context"


TABLE_HEAD = "Product: Lifter; Launched: 2015; Units sold: 1,200."  # the table's first row, naming its columns


async def test_navigate_document_bounds(tk: Toolkit) -> None:
    intro, _ = await passage_number(tk, "warehouse machines Oslo", "Acme Robotics Corp is a company in Oslo")
    limited = await _navigate(tk, intro, "next", limit=2)
    assert len(limited.items) == 2 and limited.truncated and limited.truncation_reason == "limit"
    short = await _navigate(tk, intro, "next", max_chars=100)
    assert short.truncated and short.truncation_reason == "max_chars"
    assert sum(len(p.text) for p in short.items) == 100 and short.items[-1].partial
    with pytest.raises(ToolError, match="not a current passage"):
        await tk.call("navigate_document", {"passage": "passage:gone", "relation": "next"})


# --- entities, relationships, themes ----------------------------------------------------------


async def test_search_entities_with_labels_filter(tk: Toolkit) -> None:
    people = await run(
        tk,
        "search_entities",
        {"query": "Ingrid Halvorsen Hank Scorpio Lars Berg", "labels": ["Person"]},
        EntitySearchResult,
    )
    assert people.hits and {e.label for e in people.hits} == {"Person"}
    assert {e.name for e in people.hits} == {"Ingrid Halvorsen", "Hank Scorpio"}  # the rules typed Lars Berg Unknown
    unfiltered = await run(tk, "search_entities", {"query": "Lars Berg"}, EntitySearchResult)
    assert ("Lars Berg", "Unknown") in {(e.name, e.label) for e in unfiltered.hits}
    ingrid = next(e for e in people.hits if e.name == "Ingrid Halvorsen")
    assert ingrid.n > 0 and ingrid.evidence_id == f"entity:{ingrid.id}"
    assert 1 <= len(ingrid.support) <= 3 and all(p.n > 0 and "Ingrid Halvorsen" in p.text for p in ingrid.support)

    orgs = await run(
        tk, "search_entities", {"query": "Acme Robotics Corp", "labels": ["Organization"]}, EntitySearchResult
    )
    assert orgs.hits and {e.label for e in orgs.hits} == {"Organization"}
    nothing = await run(tk, "search_entities", {"query": "Ingrid Halvorsen", "labels": ["Planet"]}, EntitySearchResult)
    assert nothing.hits == [] and nothing.hint and "get_ontology" in nothing.hint


async def test_explore_relationships_by_id_number_and_name(tk: Toolkit) -> None:
    people = await run(tk, "search_entities", {"query": "Ingrid Halvorsen", "labels": ["Person"]}, EntitySearchResult)
    ingrid = next(e for e in people.hits if e.name == "Ingrid Halvorsen")
    assert ingrid.id == "person:ingrid halvorsen"
    by_id = await run(tk, "explore_relationships", {"entity": ingrid.id}, ExplorationResult)
    by_number = await run(tk, "explore_relationships", {"entity": ingrid.n}, ExplorationResult)
    by_name = await run(tk, "explore_relationships", {"entity": "Ingrid Halvorsen"}, ExplorationResult)
    assert by_id.entity == by_number.entity == by_name.entity == "entity:person:ingrid halvorsen"
    assert by_id.edges and not by_id.truncated
    assert {e.id for e in by_id.edges} == {e.id for e in by_name.edges} == {e.id for e in by_number.edges}
    assert all("Ingrid Halvorsen" in (e.source, e.target) for e in by_id.edges)
    assert any(e.fact == FOUNDING and "Acme Robotics Corp" in (e.source, e.target) for e in by_id.edges)
    assert {"Ingrid Halvorsen", "Acme Robotics Corp", "Lars Berg"} <= {n.name for n in by_id.nodes}
    assert all(e.n > 0 for e in [*by_id.edges, *by_id.nodes])
    with pytest.raises(ToolError, match="no entity"):
        await tk.call("explore_relationships", {"entity": "Nobody Atall"})


async def test_explore_relationships_bounds_and_relation_types(tk: Toolkit) -> None:
    cut = await run(tk, "explore_relationships", {"entity": "Ingrid Halvorsen", "max_edges": 1}, ExplorationResult)
    assert cut.truncated and "max_edges" in cut.truncated_by
    assert len(cut.edges) <= 1 and cut.hint and "max_edges" in cut.hint
    typed = await run(
        tk, "explore_relationships", {"entity": "Ingrid Halvorsen", "relation_types": ["RELATED_TO"]}, ExplorationResult
    )
    assert typed.edges and {e.type for e in typed.edges} == {"RELATED_TO"}
    other = await run(
        tk, "explore_relationships", {"entity": "Ingrid Halvorsen", "relation_types": ["FOUNDED"]}, ExplorationResult
    )
    assert other.edges == [] and other.hint == "no relations of those types around this entity"


async def test_search_themes_after_finalize(tk: Toolkit) -> None:
    found = await run(tk, "search_themes", {"query": "Acme Robotics Corp Ingrid Halvorsen"}, ThemeSearchResult)
    assert found.index_state == "ready" and found.themes
    assert any("Acme Robotics Corp" in t.entities for t in found.themes)
    for t in found.themes:
        assert t.n > 0 and t.size >= len(t.entities) >= 2 and t.evidence_id.startswith("theme:")
        assert len(t.passages) <= 3 and all(p.n > 0 for p in t.passages)
    cited = await check(tk, f"Acme Robotics Corp and Ingrid Halvorsen form one group [{found.themes[0].n}].")
    assert cited.sources[0]["kind"] == "theme"


async def test_search_themes_before_finalize_says_so(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as fresh:
        await fresh.ingest(text=GLOBEX, key="globex")
        found = await run(Toolkit(fresh), "search_themes", {"query": "Globex Company"}, ThemeSearchResult)
    assert found.themes == [] and found.index_state == "missing"
    assert found.hint and "finalize" in found.hint


# --- cypher_query ---------------------------------------------------------------------------


async def test_cypher_match_with_limit(tk: Toolkit) -> None:
    rows = await run(
        tk,
        "cypher_query",
        {
            "query": "MATCH (e:Entity) WHERE e.label = $label RETURN e.name AS name ORDER BY name",
            "params": {"label": "Person"},
        },
        CypherResult,
    )
    assert rows.columns == ["name"] and not rows.truncated
    assert [r["name"] for r in rows.rows] == ["Hank Scorpio", "Ingrid Halvorsen"]
    cut = await run(tk, "cypher_query", {"query": "MATCH (c:Chunk) RETURN c.id", "limit": 3}, CypherResult)
    assert len(cut.rows) == 3 and cut.truncated
    assert "(truncated at the limit)" in cut.to_llm_text()


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ("CREATE (:Entity {id: 'x', name: 'x'})", "CREATE"),
        ("MERGE (e:Entity {id: 'x'}) RETURN e", "MERGE"),
        ("MATCH (e:Entity) SET e.name = 'x'", "SET"),
        ("MATCH (e:Entity) DELETE e", "DELETE"),
        ("MATCH (e:Entity) DETACH DELETE e", "DELETE"),
        ("MATCH (e:Entity) REMOVE e.name", "REMOVE"),
        ("CALL CREATE_FTS_INDEX('Chunk', 'evil', ['text'])", "CREATE"),
        ("CALL drop_fts_index('Chunk', 'chunk_fts')", "CALL drop_fts_index"),
        ("CALL some_unknown_procedure() RETURN *", "CALL some_unknown_procedure"),
        ("MATCH (n) RETURN n; CREATE (:Entity {id:'x'})", "several"),
        ("MATCH (n) RETURN n LIMIT 1; COMMIT", "several"),
        ("LOAD FROM '/etc/passwd' RETURN *", "LOAD"),
        ("COPY Entity FROM '/tmp/entities.csv'", "COPY"),
        ("COPY (MATCH (c:Chunk) RETURN c.text) TO '/tmp/out.csv'", "COPY"),
        ("INSTALL json", "INSTALL"),
        ("ATTACH '/tmp/other.db' AS other (dbtype kuzu)", "ATTACH"),
    ],
)
async def test_cypher_refuses_writes_files_and_unknown_procedures(tk: Toolkit, query: str, refused: str) -> None:
    with pytest.raises(ToolError) as err:
        await tk.call("cypher_query", {"query": query})
    assert refused in err.value.message
    assert err.value.hint
    count = await run(
        tk, "cypher_query", {"query": "MATCH (e:Entity) WHERE e.id = 'x' RETURN count(e) AS n"}, CypherResult
    )
    assert count.rows == [{"n": 0}]


async def test_cypher_allows_write_words_in_strings_and_property_names(tk: Toolkit) -> None:
    query = "MATCH (c:Chunk) WHERE c.text CONTAINS 'create' OR c.text CONTAINS 'Hawk' RETURN c.`index` // delete"
    rows = await run(tk, "cypher_query", {"query": query}, CypherResult)
    assert rows.rows


async def test_cypher_error_on_unknown_label_hints_the_tables(tk: Toolkit) -> None:
    with pytest.raises(ToolError) as err:
        await tk.call("cypher_query", {"query": "MATCH (p:Person) RETURN p.name"})
    assert "Person" in err.value.message
    for name in ("Chunk", "Document", "Entity", "RELATES"):
        assert name in err.value.hint
    assert "Person" in err.value.hint  # the labels that are values of e.label


async def test_cypher_engine_error_keeps_the_stores_hint_before_the_tables(tk: Toolkit) -> None:
    """The store's hint (a quoting rule, a crash) reaches the agent; the schema follows it."""
    with pytest.raises(ToolError) as err:
        await tk.call("cypher_query", {"query": "MATCH (c:Chunk) RETURN c.no_such_column"})
    assert "no_such_column" in err.value.message
    assert err.value.hint.startswith("check the query against the schema; tables: ")
    assert "Chunk" in err.value.hint


async def test_cypher_results_carry_no_internal_properties(tk: Toolkit) -> None:
    rows = await run(
        tk, "cypher_query", {"query": "MATCH (c:Chunk)<-[:MENTIONED_IN]-(e:Entity) RETURN c, e LIMIT 3"}, CypherResult
    )
    assert rows.rows
    for row in rows.rows:
        assert row["c"]["table"] == "Chunk" and row["e"]["table"] == "Entity"
        for node in (row["c"], row["e"]):
            assert not {"embedding", "search_text", "_id"} & set(node)


async def _build_embedded(db: Path) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        await kb.ingest(text=GLOBEX, key="globex")
        await kb.ingest(text="The Hawk drone counts stock from the air.", key="hawk")
        await kb.finalize()
        status = await kb.status()
        assert (status.embedding_model, status.passages, status.pending_embeddings) == (HashEmbedder.name, 2, 0)


@pytest.fixture(scope="module")
def embedded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A knowledge base whose passages do have vectors, built once."""
    db = tmp_path_factory.mktemp("embedded") / "kb.db"
    asyncio.run(_build_embedded(db))
    return db


@pytest.fixture
async def embedded_tk(embedded_db: Path) -> AsyncIterator[Toolkit]:
    async with KnowledgeBase(embedded_db, extractor="rules", embedder=HashEmbedder()) as kb:
        yield Toolkit(kb, read_only=True)


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (c:Chunk) RETURN c.embedding",
        "MATCH (c:Chunk) RETURN c.`embedding` AS v",
        "MATCH (c:Chunk) RETURN c.EMBEDDING AS v",
        "MATCH (c:Chunk) WITH c.embedding AS v RETURN [v] AS vs",
        "MATCH (c:Chunk) RETURN {v: c.embedding} AS m",
        "MATCH (c:Chunk) RETURN struct_extract(c, 'embedding') AS v",
        "MATCH (c:Chunk) RETURN c.search_text",
        "MATCH (e:Entity) RETURN e.search_text",
    ],
)
async def test_cypher_never_returns_vectors_or_index_text(embedded_tk: Toolkit, query: str) -> None:
    with pytest.raises(ToolError) as err:
        await embedded_tk.call("cypher_query", {"query": query})
    assert "embedding" in err.value.message or "search_text" in err.value.message


async def test_cypher_nodes_with_vectors_come_back_without_them(embedded_tk: Toolkit) -> None:
    rows = await run(embedded_tk, "cypher_query", {"query": "MATCH (c:Chunk) RETURN c, collect(c) AS cs"}, CypherResult)
    assert len(rows.rows) == 2
    dumped = json.dumps(rows.rows)
    assert "embedding" not in dumped and "search_text" not in dumped
    assert {r["c"]["text"] for r in rows.rows} == {GLOBEX.strip(), "The Hawk drone counts stock from the air."}


async def test_semantic_search_with_an_embedder(embedded_tk: Toolkit) -> None:
    found = await run(
        embedded_tk, "search_passages", {"query": "Hawk drone stock", "mode": "semantic"}, PassageSearchResult
    )
    assert found.hits and all(h.paths == ["semantic"] for h in found.hits)
    assert found.index_state == {"pending_embeddings": 0}


# --- get_context and source_status -----------------------------------------------------------


async def test_get_context_packs_chosen_numbers_and_lists_missing(tk: Toolkit) -> None:
    found = await run(tk, "retrieve", {"question": "Who founded Acme Robotics Corp?"}, RetrieveResult)
    passage, entity = found.passages[0], found.entities[0]
    packed = await run(tk, "get_context", {"evidence": [passage.n, entity.n, 9999, passage.n]}, ContextResult)
    assert packed.included == [passage.n, entity.n]
    assert packed.missing == [9999]
    assert packed.hint
    assert f"[{passage.n}] " in packed.context and f"[{entity.n}] {entity.name}" in packed.context
    assert packed.context.index("## Passages") < packed.context.index("## Entities")


async def test_get_context_stays_within_max_tokens(tk: Toolkit) -> None:
    found = await run(tk, "retrieve", {"question": "Lifter depot Acme Robotics Corp"}, RetrieveResult)
    numbers = [p.n for p in found.passages]
    assert len(numbers) >= 4
    packed = await run(tk, "get_context", {"evidence": numbers, "max_tokens": 120}, ContextResult)
    assert default_tokenizer().count(packed.context) <= 120
    assert packed.included, "something fits"
    for n in numbers:  # what it says it included is in the text, and nothing else is
        assert (f"[{n}] " in packed.context) == (n in packed.included)
    assert set(packed.included) | set(packed.omitted) == set(numbers)
    assert packed.omitted and packed.missing == []


async def test_source_status_current_and_unknown(tk: Toolkit, built_corpus: tuple[Path, Path]) -> None:
    key = f"file:{built_corpus[1].resolve().name}/acme.md"
    current = await run(tk, "source_status", {"document_key": key}, SourceStatusResult)
    assert current.state == SourceState.current and current.version == 1
    assert current.content_hash and len(current.content_hash) == 64
    unknown = await run(tk, "source_status", {"document_key": "file:never/ingested.md"}, SourceStatusResult)
    assert unknown.state == SourceState.unknown and unknown.content_hash is None
    assert unknown.hint and "'file:'" in unknown.hint


# --- bounds and errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "field", "says"),
    [
        ("retrieve", {"question": "x", "top_k": 0}, "top_k", "greater than or equal to 1"),
        ("retrieve", {"question": "x", "top_k": 51}, "top_k", "less than or equal to 50"),
        ("retrieve", {"question": "x", "expand_hops": 6}, "expand_hops", "less than or equal to 5"),
        ("retrieve", {"question": ""}, "question", "at least 1 character"),
        ("retrieve", {"question": "x", "paths": ["everything"]}, "paths.0", "Input should be"),
        ("retrieve", {"question": "x", "bogus": 1}, "bogus", "Extra inputs are not permitted"),
        ("retrieve", {}, "question", "Field required"),
        ("search_passages", {"query": "x", "limit": 0}, "limit", "greater than or equal to 1"),
        ("search_passages", {"query": "x", "mode": "fuzzy"}, "mode", "'lexical', 'semantic' or 'hybrid'"),
        ("cypher_query", {"query": "MATCH (n) RETURN n", "limit": 0}, "limit", "greater than or equal to 1"),
        ("cypher_query", {"query": "MATCH (n) RETURN n", "limit": 1001}, "limit", "less than or equal to 1000"),
        ("explore_relationships", {"entity": "x", "depth": 3}, "depth", "less than or equal to 2"),
        ("read_passages", {"passages": []}, "passages", "at least 1 item"),
        ("get_context", {"evidence": [1], "max_tokens": 10}, "max_tokens", "greater than or equal to 50"),
        ("status", {"verbose": True}, "verbose", "Extra inputs are not permitted"),
    ],
)
async def test_bounds_are_rejected_with_a_clear_message(
    tk: Toolkit, tool: str, args: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(ToolError) as err:
        await tk.call(tool, args)
    assert err.value.message.startswith(f"invalid arguments for {tool}: {field}: ")
    assert says in err.value.message
    assert err.value.hint.startswith(f"{tool} takes: ")
    if "Extra inputs" not in says:  # the hint lists the fields the tool does take, with their bounds
        assert field.split(".")[0] in err.value.hint


async def test_unknown_tool_lists_the_tools(tk: Toolkit) -> None:
    with pytest.raises(ToolError) as err:
        await tk.call("retreive", {"question": "x"})
    assert "unknown tool 'retreive'" in err.value.message
    assert "retrieve" in err.value.hint and "check_citations" in err.value.hint


KB_READ_CALLS = [
    ("status", {}),
    ("get_ontology", {}),
    ("retrieve", {"question": "Who founded Acme?"}),
    ("search_passages", {"query": "Acme", "mode": "lexical"}),
    ("read_passages", {"passages": ["passage:x"]}),
    ("navigate_document", {"passage": "passage:x", "relation": "next"}),
    ("search_entities", {"query": "Acme"}),
    ("explore_relationships", {"entity": "organization:acme"}),
    ("search_themes", {"query": "Acme"}),
    ("cypher_query", {"query": "MATCH (n) RETURN n"}),
    ("source_status", {"document_key": "file:a.md"}),
]


@pytest.mark.parametrize(("tool", "args"), KB_READ_CALLS, ids=[t for t, _ in KB_READ_CALLS])
async def test_read_tool_on_a_never_written_kb_names_it_and_creates_nothing(
    tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    db = tmp_path / "never" / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as missing:
        with pytest.raises(ToolError) as err:
            await Toolkit(missing).call(tool, args)
    assert str(db) in err.value.message
    assert "does not exist" in err.value.message and err.value.hint
    assert list(tmp_path.iterdir()) == []
