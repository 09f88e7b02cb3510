"""Any history of ingests, edits, deletes and reopens ends with the graph a fresh ingest builds.

Issue 9, point 2: re-ingesting changed files after a reopen deleted entities the new version
still mentioned (an engine quirk in `NOT EXISTS`), losing about a third of the graph. The
property compares a canonical snapshot (documents, passage texts, entities, mentions, relations;
no version numbers or ids that carry history) of the knowledge base a random history built with
one a fresh ingest of the final files builds.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evigraph import KnowledgeBase
from evigraph.store.embedded import integrity
from evigraph.store.embedded.store import EmbeddedStore

NAMES = ["Alice Walker", "Bob Marley", "Carol King", "David Bowie", "Acme Corp", "Paris", "Berlin", "Rome"]
FILES = 3

sentence = st.builds(
    lambda a, b, c, verb: f"{a} {verb} {b} in {c}.",
    st.sampled_from(NAMES[:5]),  # one word opening a sentence types by the other files' cues (test_retyping)
    st.sampled_from(NAMES),
    st.sampled_from(NAMES[5:]),
    st.sampled_from(["met", "wrote to", "worked with"]),
)
paragraphs = st.lists(sentence, min_size=1, max_size=3).map(" ".join)
operation = st.one_of(
    st.tuples(st.just("write"), st.integers(0, FILES - 1), st.lists(paragraphs, min_size=1, max_size=3)),
    st.tuples(st.just("append"), st.integers(0, FILES - 1), paragraphs),
    st.tuples(st.just("ingest")),
    st.tuples(st.just("delete"), st.integers(0, FILES - 1)),
    st.tuples(st.just("reopen")),
)

Snapshot = dict[str, frozenset[tuple[Any, ...]]]


async def snapshot(kb: KnowledgeBase) -> Snapshot:
    await kb.open()
    store = kb.store
    assert store is not None
    assert isinstance(store, EmbeddedStore)
    found: Snapshot = await store.executor.read(integrity.snapshot)
    return found


async def replay(root: Path, ops: list[tuple[Any, ...]], extractor: str | None) -> tuple[Snapshot, Snapshot]:
    """Run the history into one knowledge base, then ingest the final files into a fresh one."""
    docs = root / "docs"
    docs.mkdir()
    for i in range(FILES):  # every history starts from an ingested corpus, files sharing some names
        names = [NAMES[(2 * i + k) % 5] for k in range(5)]  # people and a company open the sentences
        (docs / f"f{i}.txt").write_text(" ".join(f"{a} met {b} in Paris." for a, b in itertools.pairwise(names)))
    async with KnowledgeBase(root / "history.db", extractor=extractor) as first:
        await first.ingest([docs], progress=False)
    # The lost-entities fault needed a reopened knowledge base, so every history starts with one.
    kb = KnowledgeBase(root / "history.db", extractor=extractor)
    try:
        for op in ops:
            path = docs / f"f{op[1]}.txt" if len(op) > 1 else None
            if op[0] == "write" and path is not None:
                path.write_text("\n\n".join(op[2]) + "\n")
            elif op[0] == "append" and path is not None:
                path.write_text((path.read_text() if path.exists() else "") + "\n" + op[2] + "\n")
            elif op[0] == "ingest" and any(docs.iterdir()):
                await kb.ingest([docs], progress=False)
            elif op[0] == "delete" and path is not None and path.exists():
                await kb.delete(await kb.file_key(path), missing_ok=True)  # appended to after a delete: never ingested
                path.unlink()
            elif op[0] == "reopen":
                await kb.close()
                kb = KnowledgeBase(root / "history.db", extractor=extractor)
        if any(docs.iterdir()):
            await kb.ingest([docs], progress=False)  # the edits not ingested yet
        history = await snapshot(kb)
        assert (await kb.check()).ok
    finally:
        await kb.close()
    if not any(docs.iterdir()):
        return history, {part: frozenset() for part in history}
    async with KnowledgeBase(root / "fresh.db", extractor=extractor) as fresh:
        await fresh.ingest([docs], progress=False)
        return history, await snapshot(fresh)


def assert_same_graph(history: Snapshot, fresh: Snapshot) -> None:
    for part in fresh:
        missing, extra = sorted(fresh[part] - history[part]), sorted(history[part] - fresh[part])
        assert not missing and not extra, f"{part}: missing {missing[:5]}, extra {extra[:5]}"


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, min_size=1, max_size=7))
def test_any_history_equals_a_fresh_ingest(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        history, fresh = asyncio.run(replay(Path(tmp), ops, "rules"))
    assert_same_graph(history, fresh)


@pytest.mark.slow
def test_reopen_and_update_with_the_default_extractor_equals_a_fresh_ingest(tmp_path: Path) -> None:
    ops: list[tuple[Any, ...]] = [
        ("reopen",),
        ("append", 0, "Carol King met David Bowie in Berlin."),
        ("write", 1, ["Acme Corp hired Alice Walker in Rome.", "Bob Marley sang in Paris."]),
        ("ingest",),
        ("reopen",),
        ("delete", 2),
        ("append", 1, "David Bowie visited Berlin."),
    ]
    history, fresh = asyncio.run(replay(tmp_path, ops, None))
    assert_same_graph(history, fresh)
    assert len(fresh["entities"]) >= 5  # the check is not vacuous: the graph has content
