"""A finalize killed while it merges leaves each batch of merges whole or absent, never half."""

from __future__ import annotations

import asyncio
import itertools
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.ingest.test_candidates import FIRST, LAST

from evigraph.kb import KnowledgeBase

PEOPLE = [f"{f} {s}" for f, s in itertools.product(FIRST[:20], LAST[:15])]  # 300, each with a misspelt twin
BATCH = 50
CHILD = f"""
import asyncio, sys
from evigraph.ingest.graph_resolution import run
from evigraph.kb import KnowledgeBase

run.MERGE_BATCH = {BATCH}  # six transactions, so kills land between and inside them

async def main():
    async with KnowledgeBase(sys.argv[1]) as kb:
        await kb.open(for_write=True)
        print("go", flush=True)
        await kb.finalize(resolver="fuzzy")
        print("done", flush=True)

asyncio.run(main())
"""


def misspelt(name: str) -> str:
    first, last = name.split()
    return f"{first} {last[:2]}{last[3:]}"


async def build(db: Path) -> int:
    async with KnowledgeBase(db, extractor="rules") as kb:
        for i in range(10):
            part = PEOPLE[i::10]
            right = " ".join(f"{p} met {q}." for p, q in itertools.pairwise(part))
            wrong = " ".join(f"{misspelt(p)} met {misspelt(q)}." for p, q in itertools.pairwise(part))
            await kb.ingest(text=right, key=f"right{i}", progress=False)
            await kb.ingest(text=wrong, key=f"wrong{i}", progress=False)
        return (await kb.status()).entities


async def state(db: Path) -> tuple[int, int, list[str]]:
    async with KnowledgeBase(db) as kb:
        await kb.open(for_write=True)  # replays what the killed process committed
        store = kb.store
        assert store is not None
        found = (await kb.check()).found
        return (await kb.status()).entities, len(await store.entity_redirects()), [p.kind for p in found]


@pytest.mark.slow
def test_merge_batches_survive_a_kill_whole_or_not_at_all(tmp_path: Path) -> None:
    base = tmp_path / "base.db"
    entities = asyncio.run(build(base))
    outcomes = set()
    for n, delay in enumerate((*(0.05 * i for i in range(16)), 60.0)):
        db = tmp_path / f"trial{n}.db"
        shutil.copyfile(base, db)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "go"
        try:
            child.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait()
        time.sleep(0.05)
        left, redirects, problems = asyncio.run(state(db))
        assert problems == []  # no ghost edges, orphans or dangling relations after the replay
        assert redirects % BATCH == 0, redirects  # whole batches only
        assert left == entities - redirects  # every recorded merge was carried out, and no other
        outcomes.add(redirects)
    assert len(PEOPLE) in outcomes  # the run left alone finished
