"""Per-client sessions stay within an evidence budget, so a server does not grow with its clients."""

from __future__ import annotations

from pathlib import Path

from evigraph import KnowledgeBase, Toolkit
from evigraph.mcp.sessions import Sessions


def fill(session: Toolkit, count: int, prefix: str) -> None:
    for i in range(count):
        session.ledger.record(f"passage:{prefix}{i}", "retrieve", "passage", f"text {prefix}{i}")


async def test_least_recently_used_sessions_go_when_the_evidence_budget_is_spent(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        sessions = Sessions(Toolkit(kb, read_only=True), capacity=100, max_evidence=250)
        for name in ("a", "b", "c"):
            fill(sessions.get(name), 100, name)
        sessions.get("a")  # 300 records held > 250: b, now the least recently used, goes
        d = sessions.get("d")
        assert len(sessions) == 3  # c, a, d
        assert len(sessions.get("a").ledger) == 100 and len(sessions.get("c").ledger) == 100
        assert len(sessions.get("b").ledger) == 0  # forgotten: a new, empty numbering
        assert d is sessions.get("d")


async def test_the_callers_own_session_is_kept_however_full(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        sessions = Sessions(Toolkit(kb, read_only=True), max_evidence=10)
        own = sessions.get("own")
        fill(own, 50, "x")
        assert sessions.get("own") is own and len(own.ledger) == 50
