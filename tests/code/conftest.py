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


# A small package of two modules, and two notes naming its symbols (tests of the tools and the web UI).

HTTP = '''"""Talking to servers."""


class Base:
    """Every policy's base."""


class RetryPolicy(Base):
    """Exponential backoff between attempts of a failed request."""

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt `attempt`."""
        return 0.5 * 2**attempt


def fetch(url: str) -> bytes:
    """Fetch `url`, retrying as the policy says."""
    RetryPolicy().delay(1)
    return b""
'''
API = '''"""The public calls."""

from client.http import fetch


def get(url: str) -> bytes:
    return fetch(url)
'''
NOTES = "RetryPolicy.delay and client.http.fetch decide the waits; see client.http.RetryPolicy."
CLASS_NOTE = "The RetryPolicy class has one method."
POLICY = "Class:client:http.py#RetryPolicy"
DELAY = "Function:client:http.py#RetryPolicy.delay"


def write_client(into: Path) -> Path:
    folder = into / "client"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "http.py").write_text(HTTP, encoding="utf-8")
    (folder / "api.py").write_text(API, encoding="utf-8")
    return folder
