"""Extraction in the worker process gives exactly what a thread gives, starts once a process has
extracted enough, never runs the caller's script again, and survives the worker dying."""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, PrivateAttr

from evigraph.errors import ConfigurationError
from evigraph.ingest.extraction import offload
from evigraph.ingest.extraction.offload import MIN_OFFLOAD_CHUNKS, run_offloaded
from evigraph.ingest.extraction.rules import RuleBasedExtraction
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import TextChunk

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the worker process is used on 2+ cores only")

_TEXT = (
    "Dr Ada Lovelace met Charles Babbage at the University of London in June 1833. "
    "Babbage showed her the Difference Engine; Lovelace later wrote about the Analytical Engine."
)


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts as a process that has extracted nothing, whatever ran before it here."""
    monkeypatch.setattr(offload, "_worker", None)
    monkeypatch.setattr(offload, "_extracted", 0)
    monkeypatch.setattr(offload, "_lost", False)
    yield
    if offload._worker is not None:
        offload._worker.close()


def _documents(n: int) -> list[list[TextChunk]]:
    return [
        [TextChunk(index=i, text=f"{_TEXT} Part {d}-{i}.", start=0, end=len(_TEXT)) for i in range(4)] for d in range(n)
    ]


def _where(_: int) -> bool:
    return offload.IN_WORKER


async def test_a_large_batch_in_the_worker_equals_the_thread_result() -> None:
    docs = _documents(MIN_OFFLOAD_CHUNKS // 4 + 1)  # over the threshold: goes to the worker
    extractor, ontology = RuleBasedExtraction(), DEFAULT_ONTOLOGY
    offloaded = await extractor.extract_many(docs, ontology)
    assert offload._worker is not None  # the worker was started for it
    assert offloaded == extractor.extract_sync(docs, ontology)
    assert any(g.relations for g in offloaded)


async def test_small_batches_start_the_worker_once_they_add_up_when_early() -> None:
    """An ingest of one-passage records never has a large batch, but is large all the same."""
    below = MIN_OFFLOAD_CHUNKS // 2
    token = offload.early.set(True)
    try:
        assert await run_offloaded(_where, 0, chunks=below) is False  # a thread
        assert offload._worker is None
        assert await run_offloaded(_where, 0, chunks=below) is True  # the two add up to the threshold
        assert await run_offloaded(_where, 0, chunks=1) is True  # and from then on every batch goes
    finally:
        offload.early.reset(token)
    assert await run_offloaded(_where, 0, chunks=1) is False  # not early: a small batch stays in a thread


async def test_small_batches_stay_in_threads_unless_early() -> None:
    for _ in range(4):
        assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS - 1) is False
    assert offload._worker is None
    assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS) is True


async def test_an_error_in_the_worker_reaches_the_caller_and_the_worker_stays() -> None:
    with pytest.raises(ValueError, match="not a number: 'x'"):
        await run_offloaded(_parse, "x", chunks=MIN_OFFLOAD_CHUNKS)
    worker = offload._worker
    assert worker is not None
    assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS) is True
    assert await run_offloaded(_parse, "41", chunks=MIN_OFFLOAD_CHUNKS) == 41
    assert offload._worker is worker


def _parse(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"not a number: {text!r}")
    return int(text)


def _die_in_worker(value: int) -> int:
    if offload.IN_WORKER:  # die as a crash would
        os._exit(1)
    return value + 1


async def test_a_dead_worker_leaves_the_batch_and_the_rest_to_threads(caplog: pytest.LogCaptureFixture) -> None:
    assert await run_offloaded(_die_in_worker, 41, chunks=MIN_OFFLOAD_CHUNKS) == 42
    assert "extraction worker process died" in caplog.text
    assert offload._worker is None
    docs = _documents(MIN_OFFLOAD_CHUNKS // 4)
    assert await RuleBasedExtraction().extract_many(docs, DEFAULT_ONTOLOGY) == RuleBasedExtraction().extract_sync(
        docs, DEFAULT_ONTOLOGY
    )
    assert offload._worker is None  # not started again: the process goes on in threads
    assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS) is False


def _input_arrives(running: str, wait: float) -> bool:
    """In the worker: whether another call reaches its input while this one runs (`running` is
    created once this one has been read, so the next lands in the pipe, not in a read-ahead)."""
    Path(running).touch()
    ready, _, _ = select.select([sys.stdin.buffer], [], [], wait)
    return bool(ready)


async def test_a_call_made_while_another_runs_waits_in_the_worker_pipe(tmp_path: Path) -> None:
    """The next batch is written to the worker as soon as it is handed over, so the worker goes
    from one call straight to the next instead of waiting for the last reply to be read back."""
    running = tmp_path / "running"
    first = asyncio.create_task(run_offloaded(_input_arrives, str(running), 60.0, chunks=MIN_OFFLOAD_CHUNKS))
    for _ in range(1200):
        if running.exists():
            break
        await asyncio.sleep(0.05)
    second = asyncio.create_task(run_offloaded(_parse, "41", chunks=MIN_OFFLOAD_CHUNKS))
    started = time.monotonic()
    assert await first is True  # the second call reached the worker while the first ran
    assert time.monotonic() - started < 30  # not the first call's own 60 s timeout
    assert await second == 41


async def test_calls_made_at_once_each_get_their_own_reply() -> None:
    """Replies are read in the order the calls were written, each by its own caller."""
    assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS) is True
    texts = [str(n) for n in range(12)]
    got = await asyncio.gather(*(run_offloaded(_parse, t, chunks=MIN_OFFLOAD_CHUNKS) for t in texts))
    assert got == list(range(12))
    errors = await asyncio.gather(
        *(run_offloaded(_parse, t, chunks=MIN_OFFLOAD_CHUNKS) for t in ("1", "x", "3")), return_exceptions=True
    )
    assert errors[0] == 1 and errors[2] == 3
    assert isinstance(errors[1], ValueError) and "not a number: 'x'" in str(errors[1])


async def test_a_tally_counts_the_worker_passages_of_its_own_task_only() -> None:
    """An ingest with two batches out at once tells which of them the worker extracted."""

    async def tallied_call(chunks: int) -> int:
        with offload.tallied() as tally:
            await run_offloaded(_where, 0, chunks=chunks)
        return tally.sent

    in_worker, in_thread = await asyncio.gather(tallied_call(MIN_OFFLOAD_CHUNKS), tallied_call(1))
    assert (in_worker, in_thread) == (MIN_OFFLOAD_CHUNKS, 0)


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """A worker started by `multiprocessing` (spawn) runs the main script again; this one must not."""
    ran = tmp_path / "ran.txt"
    script = tmp_path / "no_guard.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio
            from evigraph.ingest.extraction import offload
            from evigraph.ingest.extraction.rules import RuleBasedExtraction
            from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
            from evigraph.models import TextChunk

            with open({str(ran)!r}, "a") as f:
                f.write("ran\\n")
            text = "Ada Lovelace met Charles Babbage in London."
            docs = [[TextChunk(index=0, text=text, start=0, end=len(text))] for _ in range({MIN_OFFLOAD_CHUNKS})]
            graphs = asyncio.run(RuleBasedExtraction().extract_many(docs, DEFAULT_ONTOLOGY))
            print(offload._worker is not None, len(graphs), bool(graphs[0].relations))
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", str(MIN_OFFLOAD_CHUNKS), "True"]
    assert ran.read_text() == "ran\n"


async def test_a_call_that_does_not_pickle_runs_in_a_thread_and_keeps_the_worker() -> None:
    assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS) is True
    worker = offload._worker
    lam = lambda _: offload.IN_WORKER  # noqa: E731  (a lambda does not pickle)
    assert await run_offloaded(lam, 0, chunks=MIN_OFFLOAD_CHUNKS) is False
    assert offload._worker is worker
    assert await run_offloaded(_where, 0, chunks=MIN_OFFLOAD_CHUNKS) is True


async def test_a_worker_that_cannot_start_leaves_extraction_in_threads(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    assert await run_offloaded(_parse, "41", chunks=MIN_OFFLOAD_CHUNKS) == 41
    assert "could not start the extraction worker process" in caplog.text
    assert offload._worker is None


def _explode() -> None:
    raise ValueError("this reply cannot be read here")


class _Unreadable:
    """Pickles in the worker, but cannot be unpickled by the caller."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (_explode, ()) if offload.IN_WORKER else (_Unreadable, ())


def _unreadable(_: int) -> _Unreadable:
    return _Unreadable()


async def test_a_reply_that_cannot_be_read_drops_the_worker_and_runs_the_batch_in_a_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert isinstance(await run_offloaded(_unreadable, 0, chunks=MIN_OFFLOAD_CHUNKS), _Unreadable)
    assert "ValueError: this reply cannot be read here" in caplog.text
    assert offload._worker is None  # its pipes may be out of step: not used again


def _refuse_with_hint(_: int) -> int:
    raise ConfigurationError("the model is missing", "install it with pip install example-model")


async def test_an_error_from_the_worker_keeps_its_hint() -> None:
    """The fix an error names survives the trip back from the worker."""
    with pytest.raises(ConfigurationError) as raised:
        await run_offloaded(_refuse_with_hint, 0, chunks=MIN_OFFLOAD_CHUNKS)
    assert offload._worker is not None  # it did come from the worker
    assert raised.value.hint == "install it with pip install example-model"
    assert "pip install example-model" in str(raised.value)


class _WithPrivate(BaseModel):
    name: str
    _seen: int = PrivateAttr(default=0)


class _OwnState(BaseModel):
    name: str

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        object.__setattr__(self, "name", self.name + "!")


def test_models_cross_as_their_fields_and_come_back_equal() -> None:
    """The worker's pickling (`offload.dumps`) rebuilds models from their fields: equal, hashable
    where frozen, their unset fields still unset; a model with private state, or its own
    `__setstate__`, is pickled as it would be anyway."""
    graphs = RuleBasedExtraction().extract_sync(_documents(3), DEFAULT_ONTOLOGY)
    data = offload.dumps((True, graphs))
    assert b"rebuilt_model" in data  # the fields path, not pydantic's __setstate__
    ok, back = pickle.loads(data)
    assert ok and back == graphs and back[0].relations and back[0].mentions
    assert {hash(r) for r in back[0].relations} == {hash(r) for r in graphs[0].relations}
    chunk = TextChunk(index=0, text="Ada met Babbage.", start=0, end=16)
    again = pickle.loads(offload.dumps(chunk))
    assert again == chunk and again.model_fields_set == chunk.model_fields_set
    private = _WithPrivate(name="x")
    private._seen = 3
    data = offload.dumps(private)
    assert b"rebuilt_model" not in data
    assert pickle.loads(data)._seen == 3
    own = _OwnState(name="y")
    data = offload.dumps(own)
    assert b"rebuilt_model" not in data
    assert pickle.loads(data).name == "y!"  # its own __setstate__ ran


class _Loose(BaseModel):
    name: str
    note: str = ""


def test_frozen_models_read_back_share_one_fields_set_and_copies_stay_apart() -> None:
    """Frozen models of a class with the same fields set come back sharing one set (the memory a
    waiting write group holds); a copy with a change gets a set of its own, so the others' stay as
    they were; a model that is not frozen keeps its own set, since setting a field adds to it."""
    graphs = RuleBasedExtraction().extract_sync(_documents(3), DEFAULT_ONTOLOGY)
    back = pickle.loads(offload.dumps(graphs))
    relations = [r for g in back for r in g.relations]
    assert len(relations) > 2 and back == graphs
    assert len({id(r.__pydantic_fields_set__) for r in relations}) < len(relations)
    first = relations[0]
    second = next(r for r in relations[1:] if r.__pydantic_fields_set__ is first.__pydantic_fields_set__)
    before = set(second.model_fields_set)
    changed = first.model_copy(update={"type": "WORKS_FOR"})
    assert changed.__pydantic_fields_set__ is not first.__pydantic_fields_set__
    assert changed.model_fields_set == before | {"type"}
    assert second.model_fields_set == before and first.model_fields_set == before
    loose = [_Loose(name="a"), _Loose(name="b")]
    a, b = pickle.loads(offload.dumps(loose))
    assert a.__pydantic_fields_set__ is not b.__pydantic_fields_set__
    a.note = "set"
    assert a.model_fields_set == {"name", "note"} and b.model_fields_set == {"name"}
