"""Results over the default response size (max_response_chars, 40,000 characters): shortened, still
valid JSON, marked `truncated`, cut evidence not citable."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp import Client
from tests.mcp.conftest import build_kb, call, citations, numbers, stdio_mcp_client

from evigraph.limits import DEFAULT_LIMITS

pytestmark = pytest.mark.slow
TOPICS = [
    "harbor",
    "tide",
    "reef",
    "current",
    "salinity",
    "buoy",
    "sensor",
    "drift",
    "plankton",
    "kelp",
    "estuary",
    "lagoon",
]
DOCUMENTS = 60


def survey(i: int) -> str:
    """About 1,400 characters, one passage: 50 of them are far over the limit."""
    return " ".join(
        f"Lighthouse survey {i} at station {i * 7} recorded {TOPICS[(i + j) % len(TOPICS)]} readings of "
        f"{i * 13 + j} units near the northern breakwater."
        for j in range(14)
    )


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp-long")
    folder = base / "surveys"
    folder.mkdir()
    for i in range(DOCUMENTS):
        (folder / f"survey-{i:02d}.txt").write_text(survey(i), encoding="utf-8")
    db = base / "long.db"
    asyncio.run(build_kb(db, [folder]))
    return db


def wire_size(data: object) -> int:
    return len(json.dumps(data, ensure_ascii=False))


async def test_oversized_results_are_truncated(long_db: Path) -> None:
    async with stdio_mcp_client(long_db, "--read-only") as client:
        await oversized_retrieve(client)
        await oversized_cypher_rows(client)


async def oversized_retrieve(client: Client) -> None:
    """Valid JSON marked truncated, at most the limit, and the evidence cut from it cannot be cited."""
    result = await client.call_tool("retrieve", {"question": "lighthouse survey readings", "top_k": 50})
    assert not result.is_error
    data = result.structured_content
    assert isinstance(data, dict)
    assert data["truncated"] is True
    assert wire_size(data) <= DEFAULT_LIMITS.max_response_chars
    assert json.loads(json.dumps(data)) == data  # plain JSON all the way down
    assert "passages (50 → " in data["hint"]
    passages = data["passages"]
    assert 1 < len(passages) < 50
    assert wire_size(data) > DEFAULT_LIMITS.max_response_chars // 2  # shortened to fit, not far below the limit
    text = result.content[0].text  # type: ignore[union-attr]
    assert "shortened" in text

    # A fresh session numbers this call's evidence 1, 2, ... in order: the gaps are what was cut.
    shown = set(numbers(data))
    cut = sorted(set(range(1, max(shown) + 1)) - shown)
    assert cut, "nothing was cut from the passages"
    kept = passages[0]["n"]
    check = await citations(client, f"Lighthouse survey readings were recorded [{kept}]. More readings [{cut[0]}].")
    assert kept in check["cited"]
    assert cut[0] in check["invalid"]
    every_cut = await citations(client, " ".join(f"Claim [{n}]." for n in cut))
    assert sorted(every_cut["invalid"]) == cut and every_cut["grounded"] is False


async def oversized_cypher_rows(client: Client) -> None:
    data = await call(client, "cypher_query", {"query": "MATCH (c:Chunk) RETURN c.text AS text", "limit": 1000})
    assert data["truncated"] is True
    assert wire_size(data) <= DEFAULT_LIMITS.max_response_chars
    assert 1 < len(data["rows"]) < DOCUMENTS
    assert "rows (" in data["hint"]
