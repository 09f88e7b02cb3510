"""A small real corpus for driving the toolkit through `Toolkit.call`, and helpers shared by its tests.

The corpus is built to give every tool something to find: named people and organisations (the
rule extractor types "Dr. …" as Person and "… Corp" as Organization), figures, a Markdown table
in its own passage (the paragraph before it fills most of the section's token cap), and headings
with subsections so parent, children, siblings and table_context each have an answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from jsonschema import Draft202012Validator

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.ingest.loaders import MarkdownLoader
from evigraph.providers.embedders import Embedder
from evigraph.tools.passage_tools import PassageSearchResult
from evigraph.tools.results import ToolResult

_DEPOTS = [
    *("Bergen", "Trondheim", "Stavanger", "Tromsø", "Drammen", "Kristiansand", "Fredrikstad", "Sandnes"),
    *("Ålesund", "Bodø", "Molde", "Hamar", "Lillehammer", "Narvik", "Harstad", "Kongsberg", "Halden"),
]
PRODUCTS_PARAGRAPH = " ".join(
    f"In {2010 + i}, the Lifter line shipped {100 + 17 * i} units to the depot in {depot}."
    for i, depot in enumerate(_DEPOTS)
)
TABLE = "\n".join(
    [
        "| Product | Launched | Units sold |",
        "|---------|----------|------------|",
        "| Lifter  | 2015     | 1,200      |",
        "| Runner  | 2018     | 3,450      |",
        "| Hawk    | 2021     | 780        |",
        "| Picker  | 2022     | 2,100      |",
        "| Sorter  | 2023     | 640        |",
    ]
)
ACME = "\n".join(
    [
        "# Acme Robotics",
        "",
        "Acme Robotics Corp is a company in Oslo that builds warehouse machines. "
        "Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011 with Lars Berg.",
        "",
        "## Products",
        "",
        PRODUCTS_PARAGRAPH,
        "",
        TABLE,
        "",
        "Prices for every product are listed in euros.",
        "",
        "### Warehouse Robots",
        "",
        "The Lifter robot moves pallets of up to 900 kg. The Runner robot carries parcels between shelves.",
        "",
        "### Drones",
        "",
        "The Hawk drone counts stock from the air and was designed by Lars Berg.",
        "",
        "## People",
        "",
        "Dr. Ingrid Halvorsen chairs the board of Acme Robotics Corp. "
        "Lars Berg works with the Nordic Energy Agency on battery tests.",
        "",
    ]
)
ACME_LOADED = MarkdownLoader().load_bytes(ACME.encode(), Path("acme.md"), "acme")[0].text
"""ACME as the Markdown loader reads it (its table as rows that name their columns): passage offsets point here."""
GLOBEX = (
    "Globex Company is a rival of Acme Robotics Corp based in Bergen. "
    "Prof. Hank Scorpio runs Globex Company. "
    "Globex Company reported revenue of 4.5 million euros in 2023.\n"
)
# The plan every file ingest in these tests uses: the rule extractor is instant and deterministic
# (the default plan's "auto" would load spaCy when it is installed).
RULES_PLAN: list[dict[str, str]] = [{"match": "*", "extractor": "rules"}]

R = TypeVar("R", bound=ToolResult)
# What the input models refuse that the JSON Schema also states (a label's characters are checked
# by a validator the schema cannot express, so those refusals are left out).
SCHEMA_STATED = ("Extra inputs are not permitted", "greater than or equal", "less than or equal", "at least", "at most")


def write_corpus(folder: Path) -> Path:
    """acme.md (sections, subsections, a table) and notes/globex.txt (plain text) under `folder`."""
    (folder / "notes").mkdir(parents=True, exist_ok=True)
    (folder / "acme.md").write_text(ACME, encoding="utf-8")
    (folder / "notes" / "globex.txt").write_text(GLOBEX, encoding="utf-8")
    return folder


async def run(tk: Toolkit, name: str, args: dict[str, Any], kind: type[R]) -> R:
    """`tk.call(name, args)`, checked to return the result type the tool promises."""
    result = await tk.call(name, args)
    assert isinstance(result, kind), f"{name} returned {type(result).__name__}, not {kind.__name__}"
    assert result.tool == name
    return result


async def passage_number(tk: Toolkit, query: str, containing: str) -> tuple[int, str]:
    """(n, chunk id) of the passage holding `containing`, found the way an agent would: by search."""
    found = await run(tk, "search_passages", {"query": query, "mode": "lexical", "limit": 20}, PassageSearchResult)
    for hit in found.hits:
        if containing in hit.text:
            assert hit.n > 0
            return hit.n, hit.id
    raise AssertionError(f"no passage for {query!r} contains {containing!r}: {[h.text[:60] for h in found.hits]}")


class HashEmbedder(Embedder):
    """A deterministic bag-of-words embedder, so vectors exist without downloading a model."""

    name = "test-hash-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            norm = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append([x / norm for x in vec])
        return out


async def _build(db: Path, corpus: Path) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        report = await kb.ingest([corpus])
        assert [d.error for d in report.failed] == []
        assert (await kb.finalize()).themes > 0


@pytest.fixture(scope="session")
def built_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, corpus folder): the corpus ingested with the rule extractor and finalized, once."""
    base = tmp_path_factory.mktemp("toolkit")
    corpus = write_corpus(base / "corpus")
    db = base / "kb.db"
    asyncio.run(_build(db, corpus))
    return db, corpus


@pytest.fixture
async def kb(built_corpus: tuple[Path, Path]) -> AsyncIterator[KnowledgeBase]:
    """The shared, finalized knowledge base; tests using it only read."""
    async with KnowledgeBase(built_corpus[0], extractor="rules") as opened:
        yield opened


@pytest.fixture
def tk(kb: KnowledgeBase) -> Toolkit:
    """A read-only toolkit (so a test cannot change the shared knowledge base) with a fresh session."""
    return Toolkit(kb, read_only=True)


@pytest.fixture(autouse=True)
def schema_checked_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Check every argument dict a test sends through `Toolkit.call` against that tool's spec.

    Arguments the tool accepts must satisfy its `tool_specs()` JSON Schema, and arguments it
    refuses for an unknown field or a bound must fail the schema too, so an agent framework that
    validates with the schema sees what the toolkit sees. Returns the (tool, args) calls checked.
    """
    checked: list[tuple[str, dict[str, Any]]] = []
    original = Toolkit.call

    async def call(self: Toolkit, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        spec = next((s for s in self.tool_specs() if s.name == name), None)
        if spec is None:  # unknown or not offered: the toolkit refuses it before validating
            return await original(self, name, args)
        errors = [e.message for e in Draft202012Validator(spec.input_schema).iter_errors(args or {})]
        checked.append((name, args or {}))
        try:
            result = await original(self, name, args)
        except ToolError as exc:
            refused = exc.message.startswith(f"invalid arguments for {name}:")
            if refused and any(stated in exc.message for stated in SCHEMA_STATED):
                assert errors, f"{name}: the schema accepts {args!r}, which the tool refuses: {exc.message}"
            elif not refused:
                assert not errors, f"{name}: the schema refuses {args!r}, which the tool accepts: {errors}"
            raise
        assert not errors, f"{name}: the schema refuses {args!r}, which the tool accepts: {errors}"
        return result

    monkeypatch.setattr(Toolkit, "call", call)
    return checked
