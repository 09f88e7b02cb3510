"""The engine's page cache grows with the machine, and a bad setting is refused with the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evigraph.errors import StoreError
from evigraph.store.embedded.engine import (
    BUFFER_POOL_ENV,
    MAX_BUFFER_POOL_MB,
    MIN_BUFFER_POOL_MB,
    default_buffer_pool_mb,
)
from evigraph.store.embedded.store import EmbeddedStore


def test_a_quarter_of_memory_within_floor_and_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUFFER_POOL_ENV, raising=False)
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    assert default_buffer_pool_mb() == min(max(total_mb // 4, MIN_BUFFER_POOL_MB), MAX_BUFFER_POOL_MB)


def test_the_variable_sets_it_and_a_bad_value_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(BUFFER_POOL_ENV, "2048")
    assert default_buffer_pool_mb() == 2048
    assert EmbeddedStore(tmp_path / "kb.db").buffer_pool_mb == 2048
    assert EmbeddedStore(tmp_path / "kb.db", buffer_pool_mb=300).buffer_pool_mb == 300  # an argument wins
    monkeypatch.setenv(BUFFER_POOL_ENV, "lots")
    with pytest.raises(StoreError, match="not a number of megabytes") as refused:
        default_buffer_pool_mb()
    assert BUFFER_POOL_ENV in (refused.value.hint or "")
