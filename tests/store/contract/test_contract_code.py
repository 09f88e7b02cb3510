"""The code section of the store contract: symbols and their edges written, read, searched,
replaced and removed alike on every store, and passages linked to the symbols they name."""

from __future__ import annotations

from tests.store.contract.conftest import ALPHA, build_library, covers

from evigraph.code_records import (
    CodeChange,
    CodeEdge,
    CodeRepo,
    CodeSymbol,
    SymbolKind,
    member_id,
    module_id,
    repo_id,
)
from evigraph.models import WalkBounds
from evigraph.store import GraphStore

REPO = CodeRepo(id=repo_id("shop"), name="shop", root="/src/shop")
CORE, API = module_id("shop", "shop/core.py"), module_id("shop", "shop/api.py")
BASE = member_id("Class", "shop", "shop/core.py", "Base")
POLICY = member_id("Class", "shop", "shop/core.py", "RetryPolicy")
DELAY = member_id("Function", "shop", "shop/core.py", "RetryPolicy.delay")
HANDLE = member_id("Function", "shop", "shop/api.py", "handle")


def symbol(sid: str, kind: SymbolKind, parent: str, **fields: object) -> CodeSymbol:
    path = sid.split(":", 2)[2].split("#")[0]
    qualname = sid.split("#", 1)[1] if "#" in sid else path.removesuffix(".py").replace("/", ".")
    module = path.removesuffix(".py").replace("/", ".")
    name = qualname.rsplit(".", 1)[-1] if kind != "Module" else module
    return CodeSymbol.model_validate(
        {
            "id": sid,
            "kind": kind,
            "repo": REPO.id,
            "path": path,
            "module": module,
            "name": name,
            "qualname": qualname,
            "parent": parent,
            "language": "python",
            "line_start": 1,
            "line_end": 9,
            **fields,
        }
    )


SYMBOLS = [
    symbol(CORE, "Module", REPO.id, content_hash="c1", docstring="Core of the shop."),
    symbol(BASE, "Class", CORE, signature="class Base"),
    symbol(POLICY, "Class", CORE, signature="class RetryPolicy(Base)", refs=("Base",), docstring="How long to wait."),
    symbol(DELAY, "Function", POLICY, signature="def delay(self, attempt)", docstring="Backoff after a failure."),
    symbol(API, "Module", REPO.id, content_hash="a1", refs=("shop.core.RetryPolicy",), aliases=("RetryPolicy",)),
    symbol(HANDLE, "Function", API, signature="def handle(request)", refs=("RetryPolicy().delay",)),
]
EDGES = [
    CodeEdge(kind="IMPORTS", source=API, target=CORE),
    CodeEdge(kind="INHERITS", source=POLICY, target=BASE),
    CodeEdge(kind="CALLS", source=HANDLE, target=DELAY),
]


async def write_shop(store: GraphStore) -> None:
    await store.write_code(CodeChange(repos=[REPO], symbols=SYMBOLS, added_edges=EDGES))


@covers("code_graph", "write_code")
async def test_written_code_reads_back_whole(store: GraphStore) -> None:
    assert (await store.code_graph()).symbols == []
    await write_shop(store)
    graph = await store.code_graph()
    assert graph.repos == [REPO]
    assert sorted(graph.symbols, key=lambda s: s.id) == sorted(SYMBOLS, key=lambda s: s.id)
    assert set(graph.edges) == set(EDGES)  # and each symbol's parent, read from its CONTAINS edge
    rows = await store.cypher_query("MATCH (r:Repo)-[:CONTAINS]->(m:Module)-[:CONTAINS]->(c:Class) RETURN c.id AS c")
    assert sorted(r["c"] for r in rows) == sorted([BASE, POLICY])


@covers("write_code")
async def test_removing_a_module_takes_its_symbols_and_every_edge_touching_them(store: GraphStore) -> None:
    await write_shop(store)
    await store.write_code(CodeChange(removed=[CORE, BASE, POLICY, DELAY]))
    graph = await store.code_graph()
    assert {s.id for s in graph.symbols} == {API, HANDLE}
    assert graph.edges == []
    # replaced: the module comes back with a new hash and the edges are added again
    await store.write_code(CodeChange(symbols=SYMBOLS[:4], added_edges=EDGES))
    graph = await store.code_graph()
    assert len(graph.symbols) == len(SYMBOLS) and set(graph.edges) == set(EDGES)
    await store.write_code(CodeChange(removed_edges=[EDGES[2]]))
    assert set((await store.code_graph()).edges) == set(EDGES[:2])


@covers("search_code", "code_by_ids")
async def test_symbols_are_found_by_words_of_their_names_and_docstrings(store: GraphStore) -> None:
    assert await store.search_code("retry policy") == []
    await write_shop(store)
    hits = await store.search_code("where is the retry policy implemented?", limit=3)
    assert hits and hits[0].id == POLICY and hits[0].label == "Class"
    assert "shop/core.py:1-9" in hits[0].description and "How long to wait" in hits[0].description
    assert [h.id for h in await store.search_code("backoff failure")] == [DELAY]
    assert await store.search_code("") == []
    await store.write_code(CodeChange(removed=[DELAY]))  # the search index follows every write
    assert await store.search_code("backoff failure") == []
    await store.write_code(CodeChange(symbols=[SYMBOLS[3]]))
    assert [h.id for h in await store.search_code("backoff failure")] == [DELAY]
    found = await store.code_by_ids([DELAY, "Function:shop:nope.py#x", CORE, "not-a-symbol"])
    assert [h.id for h in found] == [DELAY, CORE]
    assert found[0].name == "shop.core.RetryPolicy.delay" and found[1].label == "Module"


@covers("explore_code")
async def test_a_walk_around_a_symbol_follows_every_code_edge_both_ways(store: GraphStore) -> None:
    assert (await store.explore_code(POLICY)).nodes == []  # no code yet
    await write_shop(store)
    walk = await store.explore_code(POLICY)
    assert walk.nodes[0] == POLICY and set(walk.nodes) == {POLICY, CORE, BASE, DELAY}  # never the Repo
    assert {(e.source, e.type, e.target) for e in walk.edges} == {
        (CORE, "CONTAINS", POLICY),
        (POLICY, "CONTAINS", DELAY),
        (POLICY, "INHERITS", BASE),
    }
    assert {e.source_name for e in walk.edges if e.target == DELAY} == {"shop.core.RetryPolicy"}
    assert {e.hop for e in walk.edges} == {1} and walk.truncated_by == []
    assert len({e.id for e in walk.edges}) == 3
    # two hops: the caller of its method, the module importing its module, its module's other class
    far = await store.explore_code(POLICY, WalkBounds(depth=2))
    assert set(far.nodes) == {POLICY, CORE, BASE, DELAY, HANDLE, API}
    assert (HANDLE, "CALLS", DELAY, 2) in {(e.source, e.type, e.target, e.hop) for e in far.edges}
    assert (API, "IMPORTS", CORE, 2) in {(e.source, e.type, e.target, e.hop) for e in far.edges}
    # bounded as an entity's walk is, saying which bound cut it
    cut = await store.explore_code(POLICY, WalkBounds(max_edges=1))
    assert len(cut.edges) == 1 and cut.truncated_by == ["max_edges"]
    few = await store.explore_code(POLICY, WalkBounds(depth=2, max_nodes=2))
    assert len(few.nodes) == 2 and "max_nodes" in few.truncated_by
    typed = await store.explore_code(DELAY, WalkBounds(depth=2, relation_types=("CALLS",)))
    assert set(typed.nodes) == {DELAY, HANDLE} and {e.type for e in typed.edges} == {"CALLS"}
    # the walk from the other end: a module's classes and who imports it
    around = await store.explore_code(CORE)
    assert set(around.nodes) == {CORE, BASE, POLICY, API}
    for gone in (member_id("Class", "shop", "shop/core.py", "Gone"), "Repo:shop", "person:ada lovelace|Person"):
        assert (await store.explore_code(gone)) == (await store.explore_code("Function:nope:x.py#y"))
        assert (await store.explore_code(gone)).nodes == []


@covers("counts")
async def test_counts_name_the_code_tables(store: GraphStore) -> None:
    assert (await store.counts()).code == {}
    await write_shop(store)
    assert (await store.counts()).code == {"Repo": 1, "Module": 2, "Class": 2, "Function": 2}
    await store.write_code(CodeChange(removed=[API, HANDLE]))
    assert (await store.counts()).code == {"Repo": 1, "Module": 1, "Class": 2, "Function": 1}


@covers("link_code_mentions", "code_mentions")
async def test_passages_link_to_the_symbols_they_name(store: GraphStore) -> None:
    library = await build_library(store)
    await write_shop(store)
    first, second = library.alpha
    await store.link_code_mentions([(first, POLICY), (second, POLICY), (first, DELAY), ("gone", POLICY)])
    await store.link_code_mentions([(first, POLICY)])  # linked already: no second edge
    assert await store.code_mentions([POLICY, DELAY, HANDLE]) == [(POLICY, first), (POLICY, second), (DELAY, first)]
    assert await store.code_mentions([POLICY], per_symbol=1) == [(POLICY, first)]
    rows = await store.cypher_query("MATCH (c:Chunk)-[:MENTIONS]->(s) RETURN count(*) AS n")
    assert rows == [{"n": 3}]
    await store.delete_document(ALPHA.key)  # a passage that goes takes its links
    assert await store.code_mentions([POLICY, DELAY]) == []


@covers("compact")
async def test_compaction_keeps_the_code_graph_and_its_index(store: GraphStore) -> None:
    library = await build_library(store)
    await write_shop(store)
    await store.link_code_mentions([(library.alpha[0], POLICY)])
    await store.write_code(CodeChange(removed=[HANDLE]))  # space for a compaction to give back
    before = (await store.code_graph(), await store.search_code("retry policy"), await store.code_mentions([POLICY]))
    await store.compact()
    after = (await store.code_graph(), await store.search_code("retry policy"), await store.code_mentions([POLICY]))
    assert after == before
    await store.write_code(CodeChange(symbols=[SYMBOLS[-1]]))  # still writable, the index still fed
    assert [h.id for h in await store.search_code("handle request")] == [HANDLE]


@covers("cypher_guide", "cypher_query")
async def test_the_guides_code_examples_run_as_written(store: GraphStore) -> None:
    await write_shop(store)
    guide = store.cypher_guide()
    examples = [
        "MATCH (f:Function)-[:CALLS]->(g:Function) WHERE g.qualname = 'RetryPolicy.delay' RETURN f.module, f.qualname",
        "MATCH (m:Module)-[:IMPORTS]->(x:Module) WHERE m.name = 'shop.api' RETURN x.name",
        "MATCH (c:Class)-[:INHERITS*1..3]->(b:Class {name: 'Base'}) RETURN c.module, c.qualname",
    ]
    for shape in ("(:Function)-[:CALLS]->(:Function)", "(:Module)-[:IMPORTS]->(:Module)", "[:INHERITS*1..3]"):
        assert shape in guide
    assert [await store.cypher_query(q) for q in examples] == [
        [{"f.module": "shop.api", "f.qualname": "handle"}],
        [{"x.name": "shop.core"}],
        [{"c.module": "shop.core", "c.qualname": "RetryPolicy"}],
    ]
    assert (await store.check()).found == []  # code tables are no damage to the integrity check
