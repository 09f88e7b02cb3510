"""Free-form Cypher's bounds and secrecy, the same on every store.

A query may read the knowledge graph and nothing else: not agents' tasks and decisions, not the
bookkeeping tables, not a hidden property by a computed name or a whole-node print, and no query
too deep, too big or growing too fast reaches an engine. Each attack here either is refused or
returns rows holding none of the secrets.
"""

from __future__ import annotations

import json

import pytest
from tests.store.contract.conftest import ALPHA, EMBEDDED_ENGINE, StoreFactory, covers
from tests.store.contract.test_contract_decisions import decision, passage

from evigraph.errors import CypherRefused, ReadOnlyQueryError
from evigraph.store import GraphStore
from evigraph.store.cypher.bounds import MAX_DEPTH
from evigraph.store.embedded.cypher_run import INDEX_HINT

GOAL = "goal-5e1f-never-shown"
CONCLUSION = "conclusion-9a7c-never-shown"
VECTOR = (0.3141592, 0.2718281, 0.1414213)
SECRETS = (GOAL, CONCLUSION, "3141592", "2718281", "ExtractionCache-value-77")

ATTACKS = [
    # agents' records, by label, without one, by id, by a walk, through the catalogue
    "MATCH (n) WHERE id(n) >= 0 AND id(n) < 100000 AND n.project IS NOT NULL RETURN n",
    "MATCH (n) RETURN n",
    "MATCH (n) WHERE n.goal IS NOT NULL RETURN n.goal AS g",
    "MATCH (t:TraceTask) RETURN t",
    "MATCH (t:`tracetask`) RETURN t.goal AS g",
    "MATCH (d:TraceDecision) RETURN d.conclusion AS c",
    "MATCH (e:Entity) OPTIONAL MATCH (n) WHERE n.id = e.id RETURN n",
    "MATCH (e:Entity) WITH e MATCH (n) WHERE id(n) = id(e) + 1 RETURN n",
    "MATCH (a:Entity)-[*1..3]-(b) RETURN b",
    "MATCH (a:Entity)-[*1..3]-(b:Entity) RETURN b",
    "CALL table_info('Trace' + 'Decision') RETURN *",
    "CALL table_info('TraceTask') RETURN *",
    # bookkeeping
    "MATCH (m:EvigraphMeta) RETURN m",
    "MATCH (s:SourceLog) RETURN s",
    "MATCH (x:ExtractionCache) RETURN x.value AS v",
    # hidden properties: computed keys and whole-node prints
    "MATCH (c:Chunk) RETURN c['embed' + 'ding'] AS x",
    "MATCH (c:Chunk) WITH c, 'embed' AS k RETURN c[k + 'ding'] AS x",
    "MATCH (c:Chunk) RETURN [k IN ['embed'] | c[k + 'ding']] AS x",
    "MATCH (c:Chunk) RETURN list_to_string(',', [c]) AS x",
    "MATCH (c:Chunk) RETURN c",
    "MATCH (c:Chunk) RETURN {x: c, y: [c]} AS m",
    "MATCH p = (c:Chunk)-[:PART_OF]->(d:Document) RETURN p, nodes(p) AS ns",
    "MATCH (c:Chunk) RETURN struct_extract(c, 'embed' + 'ding') AS x",
    "MATCH (c:Chunk) RETURN properties(nodes(p), 'embedding') AS x",
]


async def secrets_store(store: GraphStore) -> None:
    await store.write_versions([ALPHA])
    [first, *_] = await store.document_passages(ALPHA.key)
    await store.set_embedding_model("contract-test", 3)
    await store.write_embeddings([(first.id, VECTOR)])
    await store.cache_extractions({"k": "ExtractionCache-value-77"})
    await store.create_task("p", "ann", "t", GOAL)
    await store.record_decision("p", "ann", decision(await passage(store, ALPHA.key), conclusion=CONCLUSION))


@covers("cypher_query")
@pytest.mark.parametrize("attack", ATTACKS)
async def test_no_query_reads_agents_records_bookkeeping_or_hidden_properties(
    store: GraphStore, factory: StoreFactory, attack: str
) -> None:
    await secrets_store(store)
    try:
        rows = await store.cypher_query(attack)
    except ReadOnlyQueryError as refused:
        assert refused.hint
        return
    shown = json.dumps(rows)
    for secret in SECRETS:
        assert secret not in shown, (attack, shown[:300])
    for hidden in ("embedding", "search_text", "sentence_vectors", "passage_context", "live"):
        assert f'"{hidden}"' not in shown, (attack, shown[:300])


@covers("cypher_query")
async def test_the_knowledge_graph_stays_readable(store: GraphStore, factory: StoreFactory) -> None:
    await secrets_store(store)
    if factory.scope is not None and factory.scope != ("*",):
        pytest.skip("a scoped store refuses free-form Cypher")
    rows = await store.cypher_query("MATCH (c:Chunk)-[:PART_OF]->(d:Document) RETURN d.key AS key, count(c) AS n")
    assert rows == [{"key": ALPHA.key, "n": len(ALPHA.chunks)}]
    # a list index still works where keys are made numeric (Kuzu counts from 1, FalkorDB from 0)
    rows = await store.cypher_query(
        "MATCH (c:Chunk) WITH c, ['a', 'b'] AS l, 1 AS i RETURN l[i] AS x, c.text AS t LIMIT 1"
    )
    assert rows[0]["x"] == ("b" if factory.name == "falkordb" else "a") and rows[0]["t"]
    # a passage's `index`, quoted, reads on every store; LadybugDB reserves the bare word and says so
    rows = await store.cypher_query("MATCH (c:Chunk) RETURN c.`index` AS i ORDER BY i")
    assert rows == [{"i": i} for i in range(len(ALPHA.chunks))]
    bare = "MATCH (c:Chunk) RETURN c.index AS i ORDER BY i"
    if factory.name != "falkordb" and EMBEDDED_ENGINE == "ladybug":
        with pytest.raises(ReadOnlyQueryError) as refused:
            await store.cypher_query(bare)
        assert refused.value.hint == INDEX_HINT
    else:
        assert await store.cypher_query(bare) == rows


@covers("cypher_query")
@pytest.mark.parametrize(
    "query",
    [
        "RETURN " + "lower(" * 800 + "'x'" + ")" * 800 + " AS x",
        "RETURN " + "lower(" * 10_000 + "'x'" + ")" * 10_000 + " AS x",
        "RETURN " + "[" * 300 + "1" + "]" * 300 + " AS x",
        "RETURN " + "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1) + " AS x",
        "RETURN " + "-" * 24 + "1 AS x",
        "RETURN " + "NOT " * 24 + "true AS x",
        "RETURN " + "CASE WHEN true THEN " * 20 + "1" + " ELSE 0 END" * 20 + " AS x",
        "WITH 'xxxxxxxxxx' AS s " + " ".join(["WITH s + s AS s"] * 26) + " RETURN size(s) AS n",
        "WITH [1, 2, 3] AS l " + " ".join(["WITH list_concat(l, l) AS l"] * 17) + " RETURN size(l) AS n",
        "RETURN reduce(s = 'x', i IN range(1, 40) | s + s) AS x",
        "RETURN size(range(1, 50000000)) AS n",
        "MATCH (a:Entity)-[:RELATES*]->(b:Entity) RETURN count(*) AS n",
        "MATCH " + ", ".join(f"(c:Entity)-[:RELATES]->(x{i}:Entity)" for i in range(20)) + " RETURN count(*) AS n",
    ],
    ids=lambda q: q[:40],
)
async def test_queries_over_the_bounds_never_reach_the_engine(store: GraphStore, query: str) -> None:
    with pytest.raises(CypherRefused) as refused:
        await store.cypher_query(query)
    assert refused.value.hint
    assert (await store.cypher_query("MATCH (e:Entity) RETURN count(e) AS n")) == [{"n": 0}]  # still answering


async def test_nothing_outside_the_knowledge_graph_holds_a_relationship(store: GraphStore) -> None:
    """What makes a walk from a readable label safe: no relationship leads to agents' records or
    bookkeeping, so free-form Cypher checks where a pattern starts, not every node it reaches."""
    await secrets_store(store)
    from evigraph.store.core.schema_names import CYPHER_NODE_LABELS
    from evigraph.store.embedded.store import EmbeddedStore
    from evigraph.store.falkordb.store import FalkorStore

    inner = getattr(store, "inner", store)
    if isinstance(inner, FalkorStore):
        rows = inner.conn.read_sync("MATCH (a)-[r]->(b) RETURN DISTINCT labels(a) AS a, type(r) AS r, labels(b) AS b")
        ends = {(row["a"][0], row["b"][0]) for row in rows}
    else:
        assert isinstance(inner, EmbeddedStore)
        tables = inner.executor.read_sync(lambda tx: tx.rows("CALL show_tables() WHERE type = 'REL' RETURN name"))
        ends = set()
        for table in tables:
            found = inner.executor.read_sync(
                lambda tx, t=table["name"]: tx.rows(f"CALL show_connection('{t}') RETURN *")
            )
            ends |= {(c["source table name"], c["destination table name"]) for c in found}
    assert ends, "the graph holds relationships"
    assert {label for pair in ends for label in pair} <= CYPHER_NODE_LABELS
