"""Finalize types every name again from the whole knowledge base, so the graph does not depend on
the order files came in (issue 34: an update plus finalize equals a fresh ingest).

Ingest types a batch's names from that batch's cues: "Router" written in backticks in one file
is a technology, written in lower case in another it is a common word, capitalised mid-sentence
in a third it is a name. The sentences below carry such cues, so files ingested one at a time
type differently from the same files ingested together; the tests show that they do before
finalize, and that after finalize both knowledge bases hold the same entities, labels, mentions
and relations.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evigraph import KnowledgeBase
from evigraph.ingest.retyping import RETYPED_SETTING
from evigraph.store.embedded import integrity
from evigraph.store.embedded.store import EmbeddedStore

SENTENCES = [
    "Alice Walker met Bob Marley in Paris.",
    "Then Router sends it to Alice Walker.",
    "Each router keeps a list of routes.",
    "Call `Router` with the routes, then Mount the app.",
    "A mount point is a path.",
    "The Session middleware stores Cookie data for Bob Marley.",
    "Every session lives in a cookie.",
    "- Support for Router and Session",
    "We support Python and Starlette here.",
    "Install it with `pip install starlette` first.",
]
FILES = 3

Snapshot = dict[str, frozenset[tuple[Any, ...]]]

text = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4).map(" ".join)
operation = st.one_of(
    st.tuples(st.just("write"), st.integers(0, FILES - 1), text),
    st.tuples(st.just("ingest"), st.integers(0, FILES - 1)),
    st.tuples(st.just("ingest all")),
    st.tuples(st.just("finalize")),
    st.tuples(st.just("delete"), st.integers(0, FILES - 1)),
    st.tuples(st.just("reopen")),
)


async def snapshot(kb: KnowledgeBase) -> Snapshot:
    """What the graph holds, free of history; entities as (id, label), as the name an entity is
    shown by is the first form written, which follows the order of ingests."""
    await kb.open()
    assert isinstance(kb.store, EmbeddedStore)
    found: Snapshot = await kb.store.executor.read(integrity.snapshot)
    return {**found, "entities": frozenset((e[0], e[2]) for e in found["entities"])}


def differences(a: Snapshot, b: Snapshot) -> dict[str, tuple[list[Any], list[Any]]]:
    return {part: (sorted(a[part] - b[part])[:5], sorted(b[part] - a[part])[:5]) for part in a if a[part] != b[part]}


async def fresh(root: Path, docs: Path, extractor: str) -> tuple[Snapshot, Snapshot]:
    """A fresh ingest of the files in `docs`: before and after finalize."""
    async with KnowledgeBase(root / "fresh.db", extractor=extractor, embedder="none") as kb:
        await kb.ingest([docs], progress=False)
        before = await snapshot(kb)
        await kb.finalize()
        return before, await snapshot(kb)


async def one_at_a_time(root: Path, texts: list[str], extractor: str) -> tuple[Snapshot, Snapshot, Snapshot, int]:
    docs = root / "docs"
    docs.mkdir()
    for i, body in enumerate(texts):
        (docs / f"f{i}.md").write_text(body + "\n")
    async with KnowledgeBase(root / "steps.db", extractor=extractor, embedder="none") as kb:
        for i in range(len(texts)):
            await kb.ingest([docs / f"f{i}.md"], progress=False)
        steps = await snapshot(kb)
        await kb.finalize()
        final = await snapshot(kb)
        again = (await kb.finalize()).retyped
    _, together = await fresh(root, docs, extractor)
    return steps, final, together, again


@pytest.mark.parametrize("extractor", ["rules", "spacy"])
def test_files_ingested_one_at_a_time_then_finalized_equal_a_fresh_ingest(tmp_path: Path, extractor: str) -> None:
    texts = [
        "Call `Router` with the routes, then Mount the app. Alice Walker met Bob Marley in Paris.",
        "Then Router sends it to Alice Walker. A mount point is a path.",
        "Each router keeps a list of routes. The Session middleware stores Cookie data for Bob Marley.",
    ]
    steps, final, together, again = asyncio.run(one_at_a_time(tmp_path, texts, extractor))
    assert differences(steps, together), "the files type alike in any batch: the test shows nothing"
    assert not differences(final, together)
    assert len(together["entities"]) >= 4
    assert again == 0  # typed already: a second finalize changes nothing


async def replay(root: Path, ops: list[tuple[Any, ...]]) -> tuple[Snapshot, Snapshot | None]:
    """Run the history (each op on the rules extractor), ingest what is left, finalize; and the
    same files ingested fresh and finalized (None when no file is left)."""
    docs = root / "docs"
    docs.mkdir()
    for i in range(FILES):
        (docs / f"f{i}.md").write_text(SENTENCES[i] + "\n")
    kb = KnowledgeBase(root / "history.db", extractor="rules", embedder="none")
    try:
        await kb.ingest([docs / "f0.md"], progress=False)  # every history starts from a knowledge base
        for op in ops:
            path = docs / f"f{op[1]}.md" if len(op) > 1 else None
            if op[0] == "write" and path is not None:
                path.write_text(op[2] + "\n")
            elif op[0] == "ingest" and path is not None and path.exists():
                await kb.ingest([path], progress=False)
            elif op[0] == "ingest all" and any(docs.iterdir()):
                await kb.ingest([docs], progress=False)
            elif op[0] == "finalize":
                await kb.finalize()
            elif op[0] == "delete" and path is not None and path.exists():
                await kb.delete(await kb.file_key(path), missing_ok=True)
                path.unlink()
            elif op[0] == "reopen":
                await kb.close()
                kb = KnowledgeBase(root / "history.db", extractor="rules", embedder="none")
        if any(docs.iterdir()):
            await kb.ingest([docs], progress=False)
        await kb.finalize()
        history = await snapshot(kb)
        assert (await kb.check()).ok
        assert (await kb.finalize()).retyped == 0
    finally:
        await kb.close()
    if not any(docs.iterdir()):
        return history, None
    return history, (await fresh(root, docs, "rules"))[1]


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, min_size=1, max_size=7))
def test_any_history_then_finalize_equals_a_fresh_ingest_then_finalize(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        history, together = asyncio.run(replay(Path(tmp), ops))
    if together is None:
        assert not history["entities"] and not history["chunks"]
    else:
        assert not differences(history, together)


def test_finalize_marks_what_it_typed_and_types_again_after_a_write(tmp_path: Path) -> None:
    async def run() -> tuple[str | None, str | None, int]:
        (tmp_path / "a.md").write_text("A tiger hunts. The tiger naps. One tiger eats. Each tiger roars. No tiger.\n")
        (tmp_path / "b.md").write_text("The team met Tiger at noon.\n")
        async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
            await kb.ingest([tmp_path / "b.md"], progress=False)
            await kb.finalize()
            assert kb.store is not None
            first = await kb.store.get_setting(RETYPED_SETTING)
            await kb.ingest([tmp_path / "a.md"], progress=False)  # "tiger" in lower case: a common word
            changed = (await kb.finalize()).retyped
            return first, await kb.store.get_setting(RETYPED_SETTING), changed

    first, second, changed = asyncio.run(run())
    assert first is not None and second is not None and first != second
    assert changed == 1  # b.md's "Tiger" is no name once a.md writes "tiger" in lower case five times
