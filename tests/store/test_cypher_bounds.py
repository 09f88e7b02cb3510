"""The guard's size, depth, pattern, hop and growth bounds (`store/cypher/bounds.py`), on tokens.

The contract suite sends the attacks through every store; these pin down what counts: which
tokens nest, which `-` is unary, when a value's copies multiply, and that ordinary queries pass.
"""

from __future__ import annotations

import pytest

from evigraph.errors import CypherRefused
from evigraph.store.cypher.bounds import MAX_DEPTH, MAX_HOPS, check_bounds, nesting_depth
from evigraph.store.cypher.lexer import tokenize


def depth(query: str) -> int:
    return nesting_depth(tokenize(query).tokens)


def refusal(query: str) -> str:
    with pytest.raises(CypherRefused) as err:
        check_bounds(tokenize(query).tokens)
    assert err.value.hint
    return err.value.message


ORDINARY = [
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE a.name = 'Ada Lovelace' RETURN r.type, b.name, r.fact LIMIT 20",
    "MATCH (c:Class)-[:INHERITS*1..3]->(b:Class {name: 'Base'}) RETURN c.module, c.qualname",
    "MATCH (c:Chunk)-[:MENTIONS]->(s:Module|Class|Function) RETURN s.name, count(c) AS n ORDER BY n DESC",
    "MATCH (e:Entity) WHERE NOT e.label IN ['Date', 'Number'] AND NOT e.name STARTS WITH 'The' RETURN e.name",
    "MATCH (e:Entity) WITH e.label AS label, collect(e.name)[0..5] AS names RETURN label, names",
    "MATCH (e:Entity) RETURN CASE WHEN size(e.aliases) > 2 THEN 'many' WHEN size(e.aliases) > 0 THEN 'some' "
    "ELSE 'none' END AS kind, count(*) AS n",
    "MATCH (d:Document)<-[:PART_OF]-(c:Chunk) WITH d, count(c) AS n, collect(c.text) AS texts "
    "RETURN d.title + ' (' + d.key + ')' AS doc, n, size(texts) ORDER BY n DESC LIMIT 10",
    "UNWIND range(1, 10) AS i RETURN i * 2 - 1 AS odd, -i AS negative",
    "MATCH (e:Entity) WHERE e.name IN " + str([f"name {i}" for i in range(200)]) + " RETURN e.id",
    "MATCH (a:Entity) WHERE EXISTS { MATCH (a)-[:RELATES]->(b:Entity) WHERE b.label = 'Person' } RETURN a.name",
    "WITH 'x' AS s " + " ".join(["WITH s + '-' + s AS s"] * 4) + " RETURN size(s)",
]


@pytest.mark.parametrize("query", ORDINARY, ids=lambda q: q[:50])
def test_ordinary_queries_pass(query: str) -> None:
    check_bounds(tokenize(query).tokens)


def test_every_kind_of_nesting_counts_and_siblings_do_not() -> None:
    assert depth("RETURN lower(upper('x'))") == 2
    assert depth("RETURN [[1]], {a: {b: 1}}") == 2
    assert depth("RETURN CASE WHEN true THEN CASE WHEN false THEN 1 END END") == 4  # a CASE counts two
    assert depth("RETURN NOT NOT NOT true") == 3
    assert depth("RETURN - - 1") == 2
    assert depth("RETURN NOT (NOT (true))") == 4  # a prefix operator and its bracket each count
    assert depth("MATCH (a:Entity) WHERE NOT a.x AND NOT a.y AND NOT a.z RETURN a") == 1
    assert depth("RETURN 1 - -1 - -1 - -1 - -1 - -1 - -1 - -1 - -1 - -1 - -1 - -1") == 1  # binary, then unary
    assert depth("RETURN a.x - 1, (b) - (c), [1] - [2]") == 1


def test_over_the_bounds_each_is_refused_by_name() -> None:
    assert "nests" in refusal("RETURN " + "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1))
    assert "tokens" in refusal("RETURN " + " + ".join(["1"] * 1500))
    assert "relationship patterns" in refusal(
        "MATCH " + ", ".join(f"(c:Entity)-[:RELATES]->(x{i}:Entity)" for i in range(11)) + " RETURN 1"
    )
    for hops in ("*", "*1..", f"*1..{MAX_HOPS + 1}", f"*{MAX_HOPS + 1}", "* SHORTEST"):
        assert "upper bound" in refusal(f"MATCH (a:Entity)-[r:RELATES{hops}]->(b:Entity) RETURN b"), hops
    check_bounds(tokenize(f"MATCH (a:Entity)-[:RELATES*..{MAX_HOPS}]->(b:Entity) RETURN b").tokens)
    check_bounds(tokenize("MATCH (a:Entity) RETURN a.x * 2 AS y").tokens)  # a product is no pattern


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("WITH 'x' AS s " + " ".join(["WITH s + s AS s"] * 5) + " RETURN s", "copies"),
        ("WITH [1] AS l " + " ".join(["WITH list_concat(l, l) AS l"] * 5) + " RETURN l", "copies"),
        ("WITH {a: 'x'} AS m " + " ".join(["WITH {a: m.a + m.a} AS m"] * 5) + " RETURN m", "copies"),
        ("WITH 'x' AS s RETURN [" + ", ".join(["s"] * 17) + "] AS l", "copies"),
        ("MATCH (c:Chunk) WITH collect(c.text) AS l RETURN l + l + l + l + l", "copies"),
        ("MATCH (c:Chunk) WITH collect(c.text) AS l WITH collect(l) AS ll RETURN ll", "lists of lists"),
        ("WITH 'ab' AS s WITH [i IN range(1, 9) | s] AS l RETURN [j IN range(1, 9) | l]", "lists of lists"),
        ("RETURN reduce(s = 'x', i IN range(1, 30) | s + s) AS x", "accumulator"),
    ],
    ids=lambda v: v[:40] if isinstance(v, str) else v,
)
def test_values_that_multiply_are_refused(query: str, why: str) -> None:
    assert why in refusal(query)


def test_growth_through_unwind_and_literals_stays_allowed() -> None:
    # UNWIND takes items back out of a collected list; literals are bounded by the query's size.
    check_bounds(
        tokenize("MATCH (c:Chunk) WITH collect(c.text) AS l UNWIND l AS t WITH collect(t) AS m RETURN m").tokens
    )
    check_bounds(tokenize("WITH 'x' AS s " + " ".join(["WITH s + 'y' AS s"] * 40) + " RETURN s").tokens)
    check_bounds(tokenize("RETURN reduce(s = '', w IN ['a', 'b'] | s + w) AS joined").tokens)
