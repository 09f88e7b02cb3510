"""The web UI's files as shipped: everything the page loads is in the package (it works offline),
and the vendored Cytoscape.js is the version scripts/vendor_ui.sh pins, with its licence."""

from __future__ import annotations

import re
from pathlib import Path

from evigraph.api.app import STATIC

ROOT = Path(__file__).resolve().parents[2]
OWN = [p for p in STATIC.rglob("*") if p.suffix in {".html", ".js", ".css"} and "vendor" not in p.parts]
REFERENCE = re.compile(r"""(?:src|href)="([^"]+)\"""")
IMPORT = re.compile(r"""^import .* from "(\.[^"]+)";$""", re.MULTILINE)


def test_the_page_loads_only_files_the_package_ships() -> None:
    page = (STATIC / "index.html").read_text()
    refs = [
        r for r in REFERENCE.findall(page) if not r.startswith(("data:", "#")) and r != "./"
    ]  # ./ is the page itself
    assert "vendor/cytoscape.min.js" in refs and "js/main.js" in refs
    for ref in refs:
        assert (STATIC / ref).is_file(), f"index.html loads {ref}, which is not in {STATIC}"
    for module in STATIC.rglob("*.js"):
        if "vendor" in module.parts:
            continue
        for target in IMPORT.findall(module.read_text()):
            assert (module.parent / target).resolve().is_file(), f"{module.name} imports {target}, which is missing"


def test_no_asset_reaches_another_host() -> None:
    for path in OWN:
        text = path.read_text()
        assert not re.search(r"https?://|//cdn", text), f"{path.relative_to(STATIC)} names another host"


def test_own_files_stay_small() -> None:
    for path in OWN:
        lines = path.read_text().count("\n")
        assert lines <= 600, f"{path.relative_to(STATIC)} has {lines} lines: split it"


def test_cytoscape_is_the_pinned_version_with_its_licence() -> None:
    pinned = re.search(r'^CYTOSCAPE_VERSION="([\d.]+)"$', (ROOT / "scripts" / "vendor_ui.sh").read_text(), re.MULTILINE)
    assert pinned is not None
    bundle = (STATIC / "vendor" / "cytoscape.min.js").read_text()
    assert f'"{pinned.group(1)}"' in bundle
    assert "Permission is hereby granted" in (STATIC / "vendor" / "cytoscape.LICENSE").read_text()  # MIT
