"""The pip command that adds an optional feature to this installation of evigraph.

evigraph is installed from its source folder (`pip install -e .`), where `pip install
"evigraph[spacy]"` looks for a package on the index and fails. A hint that names a missing
extra must name the command that works here: the editable install's own folder when there is
one, the package name otherwise. pip records which it was in the distribution's
`direct_url.json` (PEP 610).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import metadata
from urllib.parse import unquote, urlparse


def install_hint(extra: str) -> str:
    """`pip install ...` for `extra` ("spacy", "embed-st"), as this installation needs it;
    "" for evigraph itself (a base dependency gone missing)."""
    if not extra:
        source = _source_folder()
        return f"pip install -e '{source}'" if source else "pip install evigraph"
    source = _source_folder()
    if source is None:
        return f"pip install 'evigraph[{extra}]'"
    return f"pip install -e '{source}[{extra}]'"


@cache
def _source_folder() -> str | None:
    """The folder evigraph was installed from with `pip install -e`, else None."""
    try:
        raw = metadata.distribution("evigraph").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    try:
        found = json.loads(raw)
    except ValueError:
        return None
    url = found.get("url", "") if isinstance(found, dict) else ""
    if not found.get("dir_info", {}).get("editable") or not url.startswith("file:"):
        return None
    return unquote(urlparse(url).path) or None


def provides(extra: str) -> bool:
    """Whether this release of evigraph has the extra `extra` at all."""
    try:
        extras = metadata.metadata("evigraph").get_all("Provides-Extra") or []
    except metadata.PackageNotFoundError:
        return False
    return extra in extras
