"""The free-form Cypher guard of the embedded store: lexer, allow-lists, rewrite, params, plan check.

Fast unit tests; the adversarial corpus against whole toolkits lives in tests/security.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evigraph.errors import CypherRefused, ReadOnlyQueryError
from evigraph.models import DocumentVersion, ExtractedEntity, GraphData, Mention, Span, TextChunk
from evigraph.store.cypher import rows as cypher_rows
from evigraph.store.cypher.lexer import Kind, tokenize
from evigraph.store.cypher.params import check_params
from evigraph.store.cypher.rows import QueryRows
from evigraph.store.embedded.cypher_guard import guard
from evigraph.store.embedded.cypher_plan import check_plan, parse_plan
from evigraph.store.embedded.store import EmbeddedStore


def refused(query: str, params: dict[str, Any] | None = None) -> str:
    with pytest.raises(CypherRefused) as err:
        guard(query, params, 101)
    assert err.value.hint
    return err.value.message


# -- lexer -----------------------------------------------------------------------------------


def test_comments_and_strings_end_where_the_engine_ends_them() -> None:
    lexed = tokenize("MATCH (n) // it's\nRETURN '/* not a comment */' /* ' */ AS s")
    kinds = [(t.kind, t.value) for t in lexed.tokens]
    assert (Kind.STRING, "/* not a comment */") in kinds
    assert [t.value for t in lexed.tokens if t.kind is Kind.WORD] == ["MATCH", "n", "RETURN", "AS", "s"]
    assert len(lexed.comments) == 2


def test_escapes_are_decoded_and_unknown_ones_refused() -> None:
    [s] = [t for t in tokenize(r"RETURN 'a\'b\u0063\U0001F600\\' AS x").tokens if t.kind is Kind.STRING]
    assert s.value == "a'bc\U0001f600\\"
    for bad in (r"RETURN '\x41'", r"RETURN '\u12'", r"RETURN '\ud800'", "RETURN 'open", "RETURN 1 /* open"):
        with pytest.raises(CypherRefused):
            tokenize(bad)


def test_backticks_double_to_escape_and_stay_names() -> None:
    [q] = [t for t in tokenize("MATCH (`a``b`) RETURN 1").tokens if t.kind is Kind.QUOTED]
    assert q.value == "a`b"
    with pytest.raises(CypherRefused):
        tokenize("MATCH (`open) RETURN 1")


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n) RETURN n\u200b",  # zero-width space
        "MATCH (n) RETURN ｎ",  # fullwidth letter
        "MATCH (n) RETURN n.\u0441ount",  # Cyrillic es
        "MATCH (n) RETURN n\u2028",  # line separator: whitespace to the engine
        "MATCH (a)\u2014[r]->(b) RETURN a",  # em dash: an arrow to the engine
        "MATCH (n) // a\rLOAD FROM 'x' RETURN n",  # lone CR: the engine's comment does not end
        "MATCH (n) RETURN 'a\u202eb'",  # bidi override inside a string
        "MATCH (n) RETURN '┌─┐'",  # would fake a frame in the engine's plan
        "RETURN 0x10",
        "RETURN a$b",
    ],
)
def test_look_alikes_invisible_and_ambiguous_characters_are_refused(query: str) -> None:
    with pytest.raises(CypherRefused):
        tokenize(query)


def test_non_ascii_text_inside_strings_is_fine() -> None:
    assert guard("MATCH (e:Entity) WHERE e.name = 'Tromsø' RETURN e", None, 5).text.endswith("LIMIT 5")


# -- allow-lists -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ('// \'\nLOAD FROM "/etc/passwd" (file_format="csv") RETURN * // \'\nLIMIT 3', "LOAD"),
        ("RETURN 1; COMMIT; MATCH (d:Document) DETACH DELETE d", "several"),
        ("MATCH (n) RETURN n /* ; */; RETURN 2", "several"),
        ("MATCH (n) `DELETE` n", "DELETE"),
        ("CALL `current_setting`('threads') RETURN *", "current_setting"),
        ("CALL show_functions() RETURN *", "show_functions"),
        ("CALL query_fts_index('Function', 'function_text_fts', 'Acme') RETURN node.name", "query_fts_index"),
        ("CALL threads=4", "threads"),
        ("RETURN `to_string`(1)", "to_string"),
        ("MATCH (c:Chunk) RETURN c.`embedding`", "embedding"),
        ("MATCH (c:Chunk) RETURN c.sentence_vectors", "sentence_vectors"),
        ("MATCH (e:Entity) RETURN e.embedding LIMIT 1", "embedding"),
        ("MATCH (c:Chunk) RETURN struct_extract(c, 'embed' + 'ding')", "string literal"),
        ("MATCH (c:Chunk) RETURN CAST(c AS STRING)", "CAST"),
        ("MATCH (c:Chunk) RETURN CAST(c, 'STRING')", "CAST"),
        ("MATCH (c:Chunk) RETURN c.*", "n.*"),
        ("RETURN range(1, 1000000)", "range"),
        ("WITH 5 AS n RETURN range(1, n)", "range"),
        ("RETURN repeat('a', 100000000)", "repeat"),
        ("RETURN n.name()", "n"),
        ("EXPLAIN MATCH (n) RETURN n", "EXPLAIN"),
        ("MATCH (n) RETURN n LIMIT 1 + 1", "LIMIT"),
        ("MATCH (n) RETURN n.name LIMIT $n", "parameter"),
    ],
)
def test_refusals_name_what_is_refused(query: str, says: str) -> None:
    assert says in refused(query)


def test_hidden_names_are_refused_in_parameters_and_escapes() -> None:
    assert "embedding" in refused("MATCH (c:Chunk) RETURN struct_extract(c, $k)", {"k": "embedding"})
    assert "search_text" in refused(r"RETURN 'search\u005ftext'")
    assert "embedding" in refused("MATCH (c:Chunk) RETURN c.`ｅｍｂｅｄｄｉｎｇ`")


def test_write_words_as_property_names_and_in_strings_pass() -> None:
    text = guard("MATCH (n) WHERE n.set = 'CREATE' AND n.delete IS NULL RETURN n.copy // DROP", None, 7).text
    assert text == "MATCH (n) WHERE n.set = 'CREATE' AND n.delete IS NULL RETURN n.copy LIMIT 7"


# -- rewrite ---------------------------------------------------------------------------------


def test_every_union_branch_gets_the_row_cap() -> None:
    text = guard("MATCH (a) RETURN a.x AS x UNION ALL MATCH (b) RETURN b.x AS x LIMIT 5000;", None, 11).text
    assert text == "MATCH (a) RETURN a.x AS x LIMIT 11 UNION ALL MATCH (b) RETURN b.x AS x LIMIT 11"


def test_a_smaller_limit_is_kept_and_a_limit_parameter_becomes_a_literal() -> None:
    assert guard("MATCH (n) WITH n LIMIT 500 RETURN n LIMIT 3", None, 11).text.endswith(
        "WITH n LIMIT 500 RETURN n LIMIT 3"
    )
    out = guard("MATCH (n) WHERE n.x = $x RETURN n LIMIT $n", {"n": 9999, "x": 1, "unused": 2}, 11)
    assert out.text.endswith("LIMIT 11") and out.params == {"x": 1}


def test_comments_never_reach_the_engine() -> None:
    assert guard("MATCH (n) /* x */ RETURN n // y", None, 2).text == "MATCH (n)   RETURN n LIMIT 2"


# -- parameters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [[1, "a"], [], [None], [{"a": 1}, {"b": 1}], 2**70, "\ud800", float("nan"), b"x", (1, 2), {}, [[1], ["a"]]],
)
def test_parameters_the_binding_mishandles_are_refused(value: Any) -> None:
    with pytest.raises(CypherRefused):
        check_params({"x": value})


def test_json_parameters_pass() -> None:
    params = {"a": [1, 2.5, None], "b": {"k": "v", "n": [True]}, "c": [[1], [2, 3]], "d": "Tromsø"}
    assert check_params(params) == params


# -- the engine's plan: the second layer, on its own -----------------------------------------


@pytest.fixture(scope="module")
def store_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("guard") / "kb.db"

    async def build() -> None:
        e = ExtractedEntity.create("Alice", "Person")
        doc = DocumentVersion(
            key="a",
            title="a",
            path="a",
            content_hash="h",
            loader="text",
            chunks=(TextChunk(index=0, text="Alice met Bob.", start=0, end=14),),
            graph=GraphData(
                entities=(e,), mentions=(Mention(entity_id=e.id, chunk_index=0, spans=(Span(start=0, end=5),)),)
            ),
        )
        async with EmbeddedStore(db) as store:
            await store.write_versions([doc])

    asyncio.run(build())
    return db


@pytest.fixture
def store(store_db: Path) -> Iterator[EmbeddedStore]:
    opened = EmbeddedStore(store_db, read_only=True)
    asyncio.run(opened.open())
    yield opened
    asyncio.run(opened.close())


def explain(store: EmbeddedStore, query: str) -> str:
    def work(tx: Any) -> str:
        result = tx.prepared("EXPLAIN " + query, {})
        text = ""
        while result.has_next():
            text += "\n".join(str(v) for v in result.get_next())
        result.close()
        return text

    return store.executor.read_sync(work)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("LOAD FROM '/etc/passwd' (file_format='csv', header=false, delim=':') RETURN *", "READ_CSV"),
        ("COPY (MATCH (e:Entity) RETURN e.name) TO '/tmp/never-written.csv'", "COPY_TO"),
        ("CALL current_setting('threads') RETURN *", "CURRENT_SETTING"),
        ("CALL show_attached_databases() RETURN *", "SHOW_ATTACHED_DATABASES"),
    ],
)
def test_the_plan_check_refuses_what_the_token_guard_would(store: EmbeddedStore, query: str, says: str) -> None:
    plan = explain(store, query)
    with pytest.raises(CypherRefused) as err:
        check_plan(plan)
    assert says in err.value.message


def test_the_plan_of_a_read_is_parsed_in_full(store: EmbeddedStore) -> None:
    ops = parse_plan(explain(store, "MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) RETURN e.name, count(c) LIMIT 3"))
    names = [op.name for op in ops]
    assert names[0] == "RESULT_COLLECTOR" and "SCAN_NODE_TABLE" in names and "AGGREGATE" in names
    assert check_plan(explain(store, "CALL show_tables() RETURN *"))[-1].function == "SHOW_TABLES"
    assert parse_plan("garbage") == []
    with pytest.raises(CypherRefused):
        check_plan("garbage")


async def test_store_query_runs_the_guarded_query_with_bounds(store_db: Path) -> None:
    async with EmbeddedStore(store_db, read_only=True) as store:
        rows = await store.cypher_query("MATCH (c:Chunk) RETURN c", limit=5)
        assert isinstance(rows, QueryRows) and not rows.truncated
        assert rows[0]["c"]["text"] == "Alice met Bob." and "embedding" not in rows[0]["c"]
        assert not {"sentence_starts", "sentence_ends", "sentence_vectors"} & rows[0]["c"].keys()
        entity = (await store.cypher_query("MATCH (e:Entity) RETURN e", limit=1))[0]["e"]
        assert entity["name"] and "embedding" not in entity
        many = await store.cypher_query("UNWIND range(1, 1000) AS x RETURN x", limit=7)
        assert [r["x"] for r in many] == list(range(1, 8))
        big = await store.cypher_query("UNWIND range(1, 1000) AS x RETURN range(1, 1000) AS r", limit=1000)
        assert isinstance(big, QueryRows) and big.truncated and 0 < len(big) < 1000  # stopped at the size cap
        with pytest.raises(CypherRefused, match="mixes kinds"):
            await store.cypher_query("MATCH (e:Entity) WHERE e.id IN $ids RETURN e", {"ids": [1, "a"]})
        with pytest.raises(ReadOnlyQueryError, match="Person"):
            await store.cypher_query("MATCH (p:Person) RETURN p")


async def test_slow_queries_are_limited_and_other_reads_keep_running(
    store_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cypher_rows, "QUEUE_SECONDS", 0.2)
    slow = (
        "UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b UNWIND range(1, 1000) AS c RETURN a*b*c AS x ORDER BY x"
    )
    async with EmbeddedStore(store_db, read_only=True) as store:
        store._cypher_slots = cypher_rows.Slots(1)
        first = asyncio.create_task(store.cypher_query(slow, timeout_ms=2500))
        await asyncio.sleep(0.3)
        with pytest.raises(CypherRefused, match="already running"):
            await store.cypher_query(slow, timeout_ms=2500)
        started = time.perf_counter()
        assert (await store.counts()).entities == 1  # the pool and the engine still serve other reads
        assert time.perf_counter() - started < 1.5
        with pytest.raises(ReadOnlyQueryError, match="Interrupted"):
            await first
