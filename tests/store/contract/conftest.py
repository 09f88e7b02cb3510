"""Store factories and the small graph every contract test reads.

A factory is all a backend adds to run the contract: where a fresh, empty knowledge base lives
and how `evigraph.store.connect` opens it. Each test module builds the shared graph once per
factory (module scope) for its read-only assertions; tests that write get a fresh store each.

The embedded factories run on the default engine, LadybugDB. `EVIGRAPH_TEST_ENGINE=kuzu` runs them
on Kuzu instead, with no FalkorDB server: the two engines cannot share a process, so
`tests/store/test_kuzu_engine.py` runs the contract that way in a process of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
import pytest_asyncio
from tests.conftest import TEST_ENGINE, FalkorServer

from evigraph.models import (
    DocumentVersion,
    ExtractedEntity,
    ExtractedRelation,
    GraphData,
    Mention,
    Span,
    TextChunk,
)
from evigraph.store import GraphStore, connect

# -- building documents ----------------------------------------------------------------------


def version(key: str, sentences: Sequence[str], names: Sequence[Sequence[tuple[str, str]]]) -> DocumentVersion:
    """A document whose chunk i names the entities names[i], chained by relations in that order."""
    chunks, entities, mentions, relations = [], [], [], []
    pos = 0
    for i, (text, chunk_names) in enumerate(zip(sentences, names, strict=True)):
        chunks.append(TextChunk(index=i, text=text, start=pos, end=pos + len(text)))
        pos += len(text) + 1
        ids = []
        for name, label in chunk_names:
            e = ExtractedEntity.create(name, label)
            entities.append(e)
            at = text.index(name)
            mentions.append(Mention(entity_id=e.id, chunk_index=i, spans=(Span(start=at, end=at + len(name)),)))
            ids.append(e.id)
        relations += [
            ExtractedRelation(source=a, target=b, fact=text, confidence=0.5, chunk_indexes=(i,))
            for a, b in itertools.pairwise(ids)
        ]
    return DocumentVersion(
        key=key,
        title=key.rsplit("/", 1)[-1].title(),
        path=None,
        content_hash=str(hash(tuple(sentences))),
        loader="text",
        chunks=tuple(chunks),
        graph=GraphData(
            entities=tuple({e.id: e for e in entities}.values()), relations=tuple(relations), mentions=tuple(mentions)
        ),
    )


def eid(name: str, label: str) -> str:
    return ExtractedEntity.create(name, label).id


ADA, BABBAGE, LONDON = eid("Ada Lovelace", "Person"), eid("Charles Babbage", "Person"), eid("London", "Location")
ENGINE, HOPPER, PHILLY = (
    eid("Analytical Engine", "Product"),
    eid("Grace Hopper", "Person"),
    eid("Philadelphia", "Location"),
)

ALPHA = version(
    "team/alpha",
    ["Ada Lovelace met Charles Babbage in London.", "Charles Babbage designed the Analytical Engine."],
    [
        [("Ada Lovelace", "Person"), ("Charles Babbage", "Person"), ("London", "Location")],
        [("Charles Babbage", "Person"), ("Analytical Engine", "Product")],
    ],
)
BETA = version(
    "team/beta",
    ["Grace Hopper built a compiler in Philadelphia."],
    [[("Grace Hopper", "Person"), ("Philadelphia", "Location")]],
)
EMBEDDING_MODEL = ("contract-test", 3)
VECTORS = {0: (1.0, 0.0, 0.0), 1: (0.0, 1.0, 0.0)}
"""Vectors of alpha's passages by index; beta's passage stays pending."""


@dataclass(frozen=True)
class Library:
    """The shared graph, opened, with the passage ids its store gave out."""

    store: GraphStore
    alpha: list[str]
    beta: list[str]


async def build_library(store: GraphStore) -> Library:
    await store.write_versions([ALPHA, BETA])
    alpha = [c.id for c in await store.document_passages(ALPHA.key)]
    beta = [c.id for c in await store.document_passages(BETA.key)]
    await store.set_embedding_model(*EMBEDDING_MODEL)
    await store.write_embeddings([(alpha[i], vec) for i, vec in VECTORS.items()])
    return Library(store, alpha, beta)


# -- factories -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreFactory:
    """How a backend gives the contract a fresh knowledge base and opens it."""

    name: str
    fresh: Callable[[Path, Path], str]
    """The location (path or URL) of a new, empty knowledge base, given a private folder and an
    empty embedded database to copy (creating one costs ~1 s, copying it nothing)."""
    scope: tuple[str, ...] | None = None

    def connect(self, location: str, *, read_only: bool = False) -> GraphStore:
        return connect(location, read_only=read_only, scope=self.scope)


def _embedded_copy(folder: Path, empty: Path) -> str:
    target = folder / "kb.db"
    shutil.copyfile(empty, target)
    return str(target)


_GRAPHS = itertools.count()


def _falkordb_graph(folder: Path, empty: Path) -> str:
    """A new, empty knowledge base on the session's FalkorDB server (`falkordb_url`): a graph of its
    own, created as the embedded factory copies an empty file."""
    url = f"{_SERVER['url']}/kb_{folder.name}_{next(_GRAPHS)}".replace("-", "_")

    async def create() -> None:
        async with connect(url):
            pass

    asyncio.run(create())
    return url


_SERVER: dict[str, str] = {}

EMBEDDED_ENGINE = TEST_ENGINE or "ladybug"
"""The engine the embedded factories' files are written by."""

FACTORIES = [
    StoreFactory("embedded", _embedded_copy),
    StoreFactory("scoped", _embedded_copy, scope=("*",)),
    *([] if TEST_ENGINE else [StoreFactory("falkordb", _falkordb_graph)]),
]


@pytest.fixture(scope="session", autouse=True)
def falkordb_url(request: pytest.FixtureRequest) -> str | None:
    """The session's FalkorDB server, where the falkordb factory makes a graph per test."""
    if TEST_ENGINE:
        return None
    server: FalkorServer = request.getfixturevalue("falkordb_server")
    _SERVER["url"] = f"falkordb://{server.host}:{server.port}"
    return _SERVER["url"]


@pytest.fixture(scope="session")
def empty_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The empty knowledge base every embedded store starts as a copy of; a copy is opened by the
    engine that wrote it (`engine.file_engine`)."""
    from evigraph.store.embedded.engine import file_engine

    path = tmp_path_factory.mktemp("template") / "empty.db"

    async def create() -> None:
        async with connect(f"{TEST_ENGINE}://{path}" if TEST_ENGINE else path):
            pass

    asyncio.run(create())
    assert file_engine(path) == EMBEDDED_ENGINE
    yield path
    if TEST_ENGINE:  # no test of the session loaded the default engine instead
        assert [e for e in ("kuzu", "ladybug") if sys.modules.get(e) is not None] == [TEST_ENGINE]


@pytest.fixture(params=FACTORIES, ids=lambda f: f.name)
def factory(request: pytest.FixtureRequest) -> StoreFactory:
    found: StoreFactory = request.param
    return found


@pytest.fixture
def location(factory: StoreFactory, tmp_path: Path, empty_db: Path) -> str:
    """Where a fresh, empty knowledge base of each kind lives."""
    return factory.fresh(tmp_path, empty_db)


@pytest_asyncio.fixture
async def store(factory: StoreFactory, location: str) -> AsyncIterator[GraphStore]:
    """An empty, open, writable store of each kind."""
    async with factory.connect(location) as opened:
        yield opened


@pytest.fixture(scope="module", params=FACTORIES, ids=lambda f: f.name)
def library_location(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, empty_db: Path
) -> tuple[StoreFactory, str]:
    factory: StoreFactory = request.param
    return factory, factory.fresh(tmp_path_factory.mktemp(factory.name), empty_db)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def library(library_location: tuple[StoreFactory, str]) -> AsyncIterator[Library]:
    """The shared graph of each kind, built once per test module: read it, never write it."""
    factory, where = library_location
    async with factory.connect(where) as opened:
        yield await build_library(opened)


# -- coverage --------------------------------------------------------------------------------

T = TypeVar("T")


def store_methods() -> set[str]:
    """The GraphStore operations a backend provides or may override: abstract or public."""
    public = {name for name, value in vars(GraphStore).items() if callable(value) and not name.startswith("_")}
    return public | set(GraphStore.__abstractmethods__)


def covers(*methods: str) -> Callable[[T], T]:
    """Mark a test as the contract for these GraphStore methods (test_contract_coverage reads the marks)."""
    unknown = set(methods) - store_methods()
    if unknown:
        raise AssertionError(f"not GraphStore methods: {sorted(unknown)}")

    def mark(test: T) -> T:
        return test

    return mark
