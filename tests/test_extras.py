"""Install hints name the command that works for this installation."""

from __future__ import annotations

from pathlib import Path

from evigraph.extras import install_hint, provides

ROOT = Path(__file__).resolve().parents[1]


def test_an_editable_install_is_told_to_install_from_its_folder() -> None:
    # The test environment installs this checkout with `pip install -e`, as the README says.
    assert install_hint("embed-st") == f"pip install -e '{ROOT}[embed-st]'"
    assert install_hint("") == f"pip install -e '{ROOT}'"


def test_extras_of_this_release_are_known() -> None:
    assert provides("spacy") and provides("embed-st") and provides("mcp")
    assert not provides("no-such-extra")
