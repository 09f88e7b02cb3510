"""The UI on a knowledge base of 10,000 entities: one neighbourhood is drawn at a time, and the
page says when a bound cut what it draws."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.api.conftest import serving
from tests.mcp.conftest import HttpServer, copy_db
from tests.ui.conftest import Ui, tab_on

from evigraph import KnowledgeBase
from evigraph.models import ExtractedEntity, ExtractedRelation

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.slow
STATIONS = 220
SENSORS = 45  # per station, so a station's neighbourhood fits one expansion; 10,121 entities in all
MAX_DRAWN = 400  # GraphCanvas's cap (static/js/graph/canvas.js)
EXPAND_NODES = 50  # one expansion's max_nodes (static/js/graph/explorer.js)


def relation(source: ExtractedEntity, kind: str, target: ExtractedEntity, fact: str) -> ExtractedRelation:
    return ExtractedRelation(source=source.id, target=target.id, type=kind, fact=fact, confidence=1.0, chunk_indexes=())


async def add_network(db: Path) -> int:
    """A control centre monitoring a chain of stations, each with its sensors: the centre is the
    one hub (220 relations), a station has 48. Returns the entities the knowledge base then holds."""
    centre = ExtractedEntity.create("Control Centre", "Organization")
    stations = [ExtractedEntity.create(f"Station {s:03d}", "Location") for s in range(STATIONS)]
    relations = []
    sensors = []
    for s, station in enumerate(stations):
        relations.append(relation(station, "MONITORED_BY", centre, f"{station.name} is monitored by the centre."))
        if s:
            relations.append(
                relation(station, "NEXT_TO", stations[s - 1], f"{station.name} is next to the one before.")
            )
        for i in range(SENSORS):
            sensor = ExtractedEntity.create(f"Sensor {s:03d}-{i:02d}", "Technology")
            sensors.append(sensor)
            relations.append(relation(sensor, "REPORTS_TO", station, f"{sensor.name} reports to {station.name}."))
    async with KnowledgeBase(db) as kb:
        await kb.upsert_entities([centre, *stations, *sensors])
        await kb.upsert_relations([(r, []) for r in relations])
        held = (await kb.status()).entities
    assert held > 10_000
    return held


LARGE_ENTITIES: dict[str, int] = {}
"""What the large knowledge base holds: the sample's entities (whatever its extractor kept) and the network's."""


@pytest.fixture(scope="module")
def large_server(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    db = copy_db(sample_db, tmp_path_factory.mktemp("ui-large"))
    LARGE_ENTITIES["held"] = asyncio.run(add_network(db))
    with serving(db.parent, "--db", str(db)) as server:
        yield server


@pytest.fixture
def large(large_server: HttpServer, browser: Browser) -> Iterator[Ui]:
    yield from tab_on(browser, large_server)


def seeded(tab: Ui) -> int:
    """Opens the page and waits for the explorer's first neighbourhood: the hub's, cut by max_nodes."""
    tab.open()
    tab.page.wait_for_selector("#inspector h3:has-text('Control Centre')")
    tab.page.wait_for_selector("#graph-notice:has-text('more relations than one expansion draws')")
    drawn: int = tab.js("() => window.evigraph.graph.nodes().length")
    return drawn


def test_a_hub_draws_one_bounded_neighbourhood(large: Ui) -> None:
    drawn = seeded(large)
    assert f"{LARGE_ENTITIES['held']:,}" in large.page.inner_text("#schema .counts")  # the store's count, over 10,000
    assert drawn == EXPAND_NODES
    large.shot("graph-10k")

    # the legend hides a label's nodes (their relations go with them), and shows them again
    large.page.click("#legend button[data-label='Location']")
    large.wait_until("() => window.evigraph.graph.nodes(':visible').length === 1")
    assert large.page.get_attribute("#legend button[data-label='Location']", "aria-pressed") == "false"
    assert large.js("() => window.evigraph.graph.edges(':visible').length") == 0
    large.page.click("#legend button[data-label='Location']")
    large.wait_until("n => window.evigraph.graph.nodes(':visible').length === n", drawn)


def test_expanding_stops_at_the_drawing_cap_and_says_so(large: Ui) -> None:
    seeded(large)
    stations = large.js(
        "() => window.evigraph.graph.nodes().filter(n => n.data('label') === 'Location').map(n => n.id())"
    )
    for station in stations:  # the explorer's own expansion, as a double-click runs it
        large.js("id => window.evigraph.explorer.expand(id)", station)
        if large.js("() => window.evigraph.graph.nodes().length") >= MAX_DRAWN:
            break
    assert large.js("() => window.evigraph.graph.nodes().length") == MAX_DRAWN
    notice = large.page.inner_text("#graph-notice")
    assert f"The drawing is capped at {MAX_DRAWN} nodes" in notice and "not drawn" in notice
    assert large.page.get_attribute("#graph-status", "data-nodes") == str(MAX_DRAWN)
    large.shot("graph-capped")


def test_a_large_query_result_says_what_the_server_cut(large: Ui) -> None:
    large.open("/#cypher")
    large.page.fill("#cypher-input", "MATCH (e:Entity) RETURN e LIMIT 1000")
    large.page.fill("#cypher-limit", "1000")
    large.page.click("#cypher-as-graph")
    large.page.click("#cypher-form button[type=submit]")
    large.page.wait_for_selector("#cypher-status:has-text('result shortened to fit')")
    drawn = large.js("() => window.evigraph.cypherGraph.nodes().length")
    large.page.click("#cypher-as-table")
    assert 0 < large.page.locator("#cypher-table tbody tr").count() == drawn < 1000
