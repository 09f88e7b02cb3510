"""The pip command that adds an optional feature to this installation of evigraph.

evigraph is installed from its source folder (`pip install -e .`), where `pip install
"evigraph[spacy]"` looks for a package on the index and fails. A hint that names a missing
extra must name the command that works here: the editable install's own folder when there is
one, the package name otherwise. pip records which it was in the distribution's
`direct_url.json` (PEP 610).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
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


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's own index of CPU-only wheels: PyPI's Linux torch wheel carries about 2.8 GB of CUDA
libraries a machine without an NVIDIA GPU never uses (CPU build: about 750 MB)."""


def torch_install_hint(extra: str) -> str:
    """The install of an extra that brings torch: on Linux without an NVIDIA GPU, CPU torch first,
    so the extra's `torch` requirement is met by it instead of the CUDA wheel."""
    if sys.platform != "linux" or has_nvidia_gpu():
        return install_hint(extra)
    return f"pip install torch --index-url {TORCH_CPU_INDEX} && {install_hint(extra)}"


def requires(module: str, package: str, extra: str, hint: Callable[[str], str] = install_hint) -> Callable[[], None]:
    """A strategy registry's check (`Entry.check`): asking for a strategy whose library is not
    installed fails at once, naming the install, instead of when it first runs."""

    def check() -> None:
        from evigraph.errors import ConfigurationError

        if importlib.util.find_spec(module) is None:
            raise ConfigurationError(f"{package} is not installed", hint=hint(extra))

    return check


def has_nvidia_gpu() -> bool:
    """Whether an NVIDIA driver is loaded (its /proc entry exists only then)."""
    return os.path.isdir("/proc/driver/nvidia/gpus") and bool(os.listdir("/proc/driver/nvidia/gpus"))


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
