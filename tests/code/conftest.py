"""Real knowledge bases with code ingested: this repository's own `src/`, and small fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import evigraph

FIXTURES = Path(__file__).parent / "fixtures"
SRC = Path(evigraph.__file__).resolve().parents[1]
"""The `src/` folder of the evigraph under test."""


def copy_fixture(name: str, into: Path) -> Path:
    """A fixture copied where no `.git` lies above it, so it is a repository of its own."""
    target = into / name
    shutil.copytree(FIXTURES / name, target)
    return target
