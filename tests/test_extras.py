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


def test_torch_extras_install_cpu_torch_first_on_a_machine_without_a_gpu() -> None:
    import sys

    from evigraph.extras import TORCH_CPU_INDEX, has_nvidia_gpu, torch_install_hint

    hint = torch_install_hint("embed-st")
    assert hint.endswith(install_hint("embed-st"))
    if sys.platform == "linux" and not has_nvidia_gpu():
        assert hint.startswith(f"pip install torch --index-url {TORCH_CPU_INDEX} && ")
    else:
        assert hint == install_hint("embed-st")
