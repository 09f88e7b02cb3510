"""`evigraph doctor` tells a CPU machine that its torch is the CUDA build, and how to swap it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evigraph.doctor import Check, doctor
from evigraph.extras import TORCH_CPU_INDEX, has_nvidia_gpu


def _torch_check() -> Check | None:
    return next((c for c in doctor().checks if c.name == "torch"), None)


def test_the_cpu_build_here_is_fine() -> None:
    pytest.importorskip("torch")
    check = _torch_check()
    assert check is not None and check.ok and "fits this machine" in check.detail


def test_cuda_libraries_without_a_gpu_get_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    if has_nvidia_gpu():
        pytest.skip("this machine has an NVIDIA GPU: the CUDA build fits it")
    # A real installed-package record, as pip writes it, for one of the CUDA wheels.
    info = tmp_path / "nvidia_cublas_cu12-12.8.4.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.8.4.1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    check = _torch_check()
    assert check is not None and not check.ok
    assert "CUDA build" in check.detail
    assert check.hint == (
        f"pip uninstall -y torch nvidia-cublas-cu12 && pip install torch --index-url {TORCH_CPU_INDEX}"
    )
    assert "nvidia_cublas" not in sys.modules  # read from the records, nothing imported
