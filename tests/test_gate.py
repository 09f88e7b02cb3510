"""Writers of one knowledge base: new-document ingests overlap, updates run alone and in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

from evigraph import KnowledgeBase, Toolkit
from evigraph.gate import Gate


async def test_shared_holders_overlap_and_exclusive_waits_for_them() -> None:
    gate = Gate()
    events: list[str] = []
    release = asyncio.Event()

    async def shared(name: str) -> None:
        async with gate.shared():
            events.append(f"{name} in")
            await release.wait()
            events.append(f"{name} out")

    async def exclusive() -> None:
        async with gate.exclusive():
            events.append("x in")
            events.append("x out")

    first, second = asyncio.create_task(shared("a")), asyncio.create_task(shared("b"))
    await asyncio.sleep(0.01)
    assert events == ["a in", "b in"]  # two ingests of new documents run together
    writer = asyncio.create_task(exclusive())
    await asyncio.sleep(0.01)
    late = asyncio.create_task(shared("c"))  # arrives after the update: must wait for it
    await asyncio.sleep(0.01)
    assert "x in" not in events and "c in" not in events
    release.set()
    await asyncio.gather(first, second, writer, late)
    assert events.index("x in") > max(events.index("a out"), events.index("b out"))
    assert events.index("c in") > events.index("x out")


async def test_on_write_policy_finalizes_after_an_ingest_that_changed_something(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb, finalize_policy="on_write")
        assert "finalize" not in {s.name for s in tk.tool_specs()}
        text = "Dr. Mira Solberg founded Fjordline Corp in Bergen. Fjordline Corp hired Dr. Anton Vik in 2019."
        first = await tk.call("ingest", {"text": text, "document_key": "notes/fjord"})
        assert first.finalized is True
        assert (await tk.call("status", {})).themes >= 1
        again = await tk.call("ingest", {"text": text, "document_key": "notes/fjord"})
        assert again.finalized is None  # nothing changed, nothing owed
