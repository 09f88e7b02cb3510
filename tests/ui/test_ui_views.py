"""Each view of the web UI in a real browser against a real server on the sample knowledge base."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Route
from tests.mcp.conftest import QUESTION
from tests.ui.conftest import Ui

pytestmark = pytest.mark.slow
CITED = re.compile(r"^\[\d+\]$")


def test_page_loads_schema_and_a_first_neighbourhood(ui: Ui) -> None:
    ui.open()
    labels = ui.page.locator("#schema-labels li").all_inner_texts()
    assert any(text.startswith("Organization") for text in labels), labels
    assert ui.page.locator("#schema-relations li").count() >= 1
    # the explorer starts from the most connected entity and draws its neighbours
    ui.page.wait_for_selector("#graph-status:not([data-nodes='0']):not([data-nodes='1'])")
    ui.page.wait_for_selector("#inspector h3")
    assert CITED.match(ui.page.inner_text("#inspector .cite"))
    assert ui.page.locator("#legend button[data-label]").count() >= 1
    assert ui.page.is_hidden("#tab-decisions")  # a server without a project offers no decision tools
    ui.shot("graph")


def test_search_shows_cited_passages_and_the_servers_context(ui: Ui) -> None:
    ui.open()
    ui.page.fill("#search-input", QUESTION)
    ui.page.press("#search-input", "Enter")
    ui.page.wait_for_selector("#search-items .passage")
    first = ui.page.locator("#search-items .passage").first
    number = first.locator(".cite").inner_text()
    assert CITED.match(number)
    assert "Harbor Lab" in first.inner_text()
    context = ui.page.inner_text("#search-context")
    assert context.startswith(f"retrieve: {QUESTION}")
    assert f"\n{number} (" in context  # the passage's number is the one the agent's text gives it
    # the panel is the server's rendering, not the page's: the same call in the same session says the same
    reply = httpx.post(
        f"{ui.server.base}/api/tools/retrieve",
        json={"question": QUESTION},
        headers={"X-Evigraph-Session": ui.session(), "Accept": "text/plain"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert reply.text.strip() == context.strip()
    ui.shot("search")


def test_cypher_console_table_graph_and_errors(ui: Ui) -> None:
    ui.open("/#cypher")
    ui.page.wait_for_selector("#view-cypher:not([hidden])")
    ui.page.fill("#cypher-input", "MATCH (e:Entity) RETURN e.name AS name, e.label AS label ORDER BY name LIMIT 5")
    ui.page.press("#cypher-input", "Control+Enter")
    ui.page.wait_for_selector("#cypher-table tbody tr")
    assert ui.page.locator("#cypher-table th").all_inner_texts() == ["name", "label"]
    assert ui.page.locator("#cypher-table tbody tr").count() == 5
    assert ui.page.inner_text("#cypher-status") == "5 rows"

    # whole nodes and relationships draw as a graph
    ui.page.fill("#cypher-input", "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a, r, b LIMIT 10")
    ui.page.click("#cypher-as-graph")
    ui.page.click("#cypher-form button[type=submit]")
    ui.wait_until("() => window.evigraph.cypherGraph && window.evigraph.cypherGraph.edges().length > 0")
    ui.shot("cypher-graph")

    ui.page.click("#cypher-as-table")
    ui.page.wait_for_selector("#cypher-table tbody tr")
    ui.shot("cypher")

    # a mistake comes back with the server's explanation, and a write is refused
    ui.page.fill("#cypher-input", "MATCH (e:Entity) RETURN e.nme")
    ui.page.click("#cypher-form button[type=submit]")
    ui.page.wait_for_selector("#cypher-error:not([hidden])")
    assert "nme" in ui.page.inner_text("#cypher-error")
    assert "get_ontology" in ui.page.inner_text("#cypher-error")  # the hint: where the names are
    ui.page.fill("#cypher-input", "MATCH (e:Entity) SET e.name = 'x' RETURN e")
    ui.page.click("#cypher-form button[type=submit]")
    ui.page.wait_for_selector("#cypher-error:has-text('read-only')")


def test_double_click_expands_a_node(ui: Ui) -> None:
    ui.open()
    ui.page.fill("#entity-input", "Harbor Lab")
    ui.page.press("#entity-input", "Enter")
    ui.page.click("#entity-hits .chip:has-text('Harbor Lab')")
    ui.page.wait_for_selector("#inspector h3:has-text('Harbor Lab')")
    drawn = ui.js("() => window.evigraph.graph.nodes().length")
    assert drawn > 1

    # click a neighbour: the inspector shows it with its evidence number
    x, y = _node_on_screen(ui, "TideScope")
    ui.page.mouse.click(x, y)
    ui.page.wait_for_selector("#inspector h3:has-text('TideScope')")
    assert CITED.match(ui.page.inner_text("#inspector .cite"))

    # double-click it: its own neighbours are drawn beside the ones already there
    ui.page.mouse.dblclick(x, y)
    ui.wait_until("n => window.evigraph.graph.nodes().length > n", drawn)
    names = ui.js("() => window.evigraph.graph.nodes().map(n => n.data('name'))")
    assert "Harbor Lab" in names and "Kuzu" in names
    assert int(ui.page.get_attribute("#graph-status", "data-nodes") or 0) == len(names)
    ui.shot("graph-expanded")


def test_a_late_first_drawing_does_not_undo_the_persons_search(ui: Ui) -> None:
    """The page seeds the explorer from the most connected entity; if that reply comes after the
    person has searched, their chips stay and the seed is not drawn over them."""
    held: list[Route] = []
    ui.page.route("**/api/tools/cypher_query", lambda route: held.append(route))  # the seed waits
    ui.open()
    for _ in range(600):  # the graph view asks for its seed once it opens
        if held:
            break
        ui.page.wait_for_timeout(50)
    assert held, "the page asked for no seed"
    ui.page.fill("#entity-input", "Kuzu")
    ui.page.press("#entity-input", "Enter")
    ui.page.wait_for_selector("#entity-hits .chip:has-text('Kuzu')", state="visible")
    for route in held:
        route.continue_()
    ui.page.unroute("**/api/tools/cypher_query")
    # the seed's reply has arrived and been handled once its request is answered
    ui.page.wait_for_load_state("networkidle")
    assert ui.page.is_visible("#entity-hits .chip:has-text('Kuzu')")
    assert ui.js("() => window.evigraph.graph.nodes().length") == 0
    ui.page.click("#entity-hits .chip:has-text('Kuzu')")
    ui.page.wait_for_selector("#inspector h3:has-text('Kuzu')")


def test_documents_view_lists_versions_and_status(ui: Ui) -> None:
    ui.open()
    ui.tab("documents")
    ui.page.wait_for_selector("#documents-table tbody tr")
    rows = ui.page.locator("#documents-table tbody tr")
    assert rows.count() == 3
    assert "harbor-lab.md" in rows.first.inner_text()
    assert "1–3 of 3 documents" in ui.page.inner_text("#documents-pager")
    rows.first.click()
    ui.page.wait_for_selector("#document-state:has-text('current')")
    assert "Content hash" in ui.page.inner_text("#document-detail")
    ui.shot("documents")


def _node_on_screen(ui: Ui, name: str) -> tuple[float, float]:
    """Where the node named `name` is drawn, in page coordinates."""
    point = ui.js(
        """name => {
            const node = window.evigraph.graph.nodes().filter(n => n.data('name') === name)[0];
            const at = node.renderedPosition();
            const box = document.getElementById('graph').getBoundingClientRect();
            return [box.x + at.x, box.y + at.y];
        }""",
        name,
    )
    return float(point[0]), float(point[1])
