"""Per-client sessions are forgotten by idle time and memory, never by count, and say so when cited."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase, Toolkit
from evigraph.errors import ConfigurationError, ToolError
from evigraph.evidence.ledger import RECORD_BYTES
from evigraph.serving.sessions import SESSION_BYTES, Sessions


def fill(session: Toolkit, count: int, prefix: str) -> None:
    for i in range(count):
        session.ledger.record(f"passage:{prefix}{i}", "retrieve", "passage", f"text {prefix}{i}")


async def test_least_recently_used_sessions_go_when_memory_is_over_the_bound(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        sessions = Sessions(Toolkit(kb, read_only=True), max_bytes=250 * (RECORD_BYTES + 100))
        for name in ("a", "b", "c"):
            fill(sessions.get(name), 100, name)
        assert sessions.held_bytes > 300 * RECORD_BYTES
        sessions.get("a")  # 300 records held: over the bound, b, now the least recently used, goes
        d = sessions.get("d")
        assert len(sessions) == 3  # c, a, d
        assert len(sessions.get("a").ledger) == 100 and len(sessions.get("c").ledger) == 100
        assert d is sessions.get("d")
        b = sessions.get("b")  # forgotten: a new, empty numbering, after its old numbers
        assert len(b.ledger) == 0 and b.ledger.record("passage:new", "retrieve", "passage", "new") == 101
        note = b.ledger.forgotten_numbers([7, 500])
        assert note is not None and note.startswith("[7] was evidence of this session before it expired")
        assert "least recently used" in note


async def test_the_callers_own_session_is_kept_however_full(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        sessions = Sessions(Toolkit(kb, read_only=True), max_bytes=10)
        own = sessions.get("own")
        fill(own, 50, "x")
        assert sessions.get("own") is own and len(own.ledger) == 50


async def test_many_new_sessions_leave_an_active_one_alone(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        sessions = Sessions(Toolkit(kb, read_only=True))
        active = sessions.get("active")
        fill(active, 20, "a")
        for i in range(5000):
            sessions.get(f"other-{i}")
        assert sessions.get("active") is active and len(active.ledger) == 20
        assert len(sessions) == 5001
        assert sessions.held_bytes < 5001 * SESSION_BYTES + 20 * (RECORD_BYTES + 200)


async def test_an_idle_session_is_forgotten_and_its_numbers_say_why(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        sessions = Sessions(Toolkit(kb, read_only=True), idle_s=0)  # idle at once: forgotten at the next call
        fill(sessions.get("a"), 3, "a")
        sessions.get("b")
        assert len(sessions) == 1 and sessions.held_bytes == SESSION_BYTES
        again = sessions.get("a")
        with pytest.raises(ToolError) as refused:
            again.resolve(2, "passage")
        assert "[2] was evidence of this session before it expired" in refused.value.message
        assert "idle (sessions idle for 0 s are forgotten)" in refused.value.message
        assert "run the reads again" in refused.value.hint
        with pytest.raises(ToolError, match="is not evidence of this session"):
            again.resolve(9, "passage")  # never given: the plain refusal


async def test_the_bounds_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    toolkit = Toolkit(KnowledgeBase(tmp_path / "kb.db"), read_only=True)
    monkeypatch.setenv("EVIGRAPH_SESSION_IDLE_MINUTES", "30")
    monkeypatch.setenv("EVIGRAPH_SESSION_MEMORY_MB", "0.5")
    sessions = Sessions(toolkit)
    assert (sessions.idle_s, sessions.max_bytes) == (1800, 500_000)
    monkeypatch.setenv("EVIGRAPH_SESSION_MEMORY_MB", "lots")
    with pytest.raises(ConfigurationError, match="EVIGRAPH_SESSION_MEMORY_MB='lots' is not a number of megabytes"):
        Sessions(toolkit)
