"""Running CPU-bound extraction in a worker process, beside the ingest instead of under its GIL.

Rule extraction is pure Python and was 62% of the processing time of an ingest without an
embedder (3,000 passages, profiled). In a worker thread it still holds the one interpreter lock
the rest of the ingest needs: chunking, resolution and the Python half of the store's writes all
waited on it, so a 2-core machine ran the ingest on about one core. A worker process gives
extraction its own interpreter, and the ingest's other work runs beside it.

A batch of `MIN_OFFLOAD_CHUNKS` passages goes to the worker. An ingest that sets `early` (one
into a server, whose writes leave this machine's cores to the ingest, or one with no embedding
model on them) sends every batch once the process has extracted that many passages in all: an
ingest of many one-passage records never has a large batch, but is large all the same. A test or
a single small file never starts a process.

The worker is `python -m evigraph.ingest.extraction.offload`, talking pickles over its stdin and
stdout, and not a `multiprocessing` child: those (with `spawn`, the one start method safe beside
the engine's threads) run the user's main script again in the child, so a script without an
`if __name__ == "__main__":` guard started its whole ingest over in every worker, which then
died. This one imports only what the function it is sent needs. It holds no state between
batches; if it dies, the batch runs in a thread and so does the rest of this process's
extraction.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import io
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from evigraph.ingest.gc_threshold import collect_rarely
from evigraph.processes import end_worker
from evigraph.trusted_models import unchecked

log = logging.getLogger(__name__)

T = TypeVar("T")

MIN_OFFLOAD_CHUNKS = 256
"""Passages this process extracts in threads before it starts the worker. Pickling a batch and
its graphs both ways costs about a tenth of extracting them, and starting the worker ~0.5 s, once."""

early: ContextVar[bool] = ContextVar("evigraph_offload_early", default=False)
"""Set for an ingest whose store writes on a server (`GraphStore.writes_on_this_machine`) or
that runs no embedding model (`evigraph.ingest.pipeline`): the worker takes every batch once the
process has extracted `MIN_OFFLOAD_CHUNKS` passages. Without a model, every batch in the worker
made 100,000 generated passages 1.13x as fast into a LadybugDB file (372 s against 420 s in
threads) at the same peak; with MiniLM (2wikimultihopqa) it ran 1.06x as fast but peaked at
2,015 MB against 1,916 MB, so an ingest into a file with a model keeps small batches in threads."""

IN_WORKER = False
"""True inside the worker process (tests use it to make a function behave differently there)."""


class _WorkerLost(Exception):
    """The worker process ended or its pipe broke mid-call."""


class _NotSent(Exception):
    """The call did not pickle; it runs in a thread, and the worker stays."""


class _Worker:
    """One worker process, taking calls in order: each is written to its input as soon as it is
    made and its reply read in turn, so a call made while another runs waits in the pipe, not here.

    A reply is read back (and its graphs rebuilt) in the calling thread, and the next batch was
    sent only after that: 1,560 such gaps left the worker idle 58 s of a 406 s, 100,000-passage
    ingest. With calls queued in the pipe it goes from one batch straight to the next.
    """

    def __init__(self) -> None:
        # The child must import what this process imports, including a path added at run time.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        self._sending = threading.Lock()
        self._turns = threading.Condition()
        self._sent = 0  # calls written so far; a call's number is its place in the replies
        self._read = 0  # replies read so far

    def call(self, fn: Callable[..., T], args: tuple[object, ...]) -> T:
        try:  # before the pipe is touched, so a failure leaves it clean
            request = dumps((fn, args))
        except Exception as exc:
            raise _NotSent(str(exc)) from exc
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        with self._sending:
            try:
                stdin.write(request)
                stdin.flush()
            except Exception as exc:  # a request cut short leaves the pipe out of step
                raise _WorkerLost(f"{type(exc).__name__}: {exc}") from exc
            mine = self._sent
            self._sent += 1
        with self._turns:
            self._turns.wait_for(lambda: self._read == mine)
            try:
                ok, value = pickle.load(stdout)
            except Exception as exc:  # the calls after this one fail alike, each in its turn
                raise _WorkerLost(f"{type(exc).__name__}: {exc}") from exc
            finally:
                self._read += 1
                self._turns.notify_all()
        if ok:
            return value  # type: ignore[no-any-return]
        raise value

    def close(self) -> None:
        end_worker(self._proc)


def dumps(value: object) -> bytes:
    """`value` pickled as it crosses to and from the worker, its pydantic models as their fields.

    A batch's graphs are about 50 models a passage, read back here, where the ingest's writes
    wait for the same interpreter. On 64 generated passages, pydantic's own `__getstate__` and
    `__setstate__` took 88-105 us a passage to pickle and 204-219 us to read back; as fields,
    66-80 and 131-157 us (about 0.7x both), to equal models. A model with private attributes or
    extra fields, or its own `__getstate__` or `__setstate__`, is pickled as it would be anyway.

    Frozen models of one class with the same fields set share one set object (`_shared_fields`):
    pydantic gives every model a set of its own, and those sets were 26 of the 48 KB a passage's
    graph held in memory (rules extractor, 513 generated passages), held by the thousands while
    a write group waits. A frozen model never changes its set in place: `model_copy` copies it
    first, and setting a field raises."""
    out = io.BytesIO()
    _ModelPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return out.getvalue()


class _ModelPickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, protocol: int) -> None:
        super().__init__(file, protocol=protocol)
        self._sets: dict[type[BaseModel], list[set[str]]] = {}

    def reducer_override(self, obj: Any) -> Any:
        if (
            isinstance(obj, BaseModel)
            and obj.__pydantic_extra__ is None
            and obj.__pydantic_private__ is None
            and type(obj).__getstate__ is _GETSTATE  # a model that pickles itself its own way keeps it
            and type(obj).__setstate__ is _SETSTATE
        ):
            return rebuilt_model, (type(obj), obj.__dict__, self._shared_fields(obj))
        return NotImplemented

    def _shared_fields(self, obj: BaseModel) -> set[str]:
        """The fields set `obj` is sent with: one object for every frozen model of its class with
        the same fields set (the pickle's memo then reads it back once, and they share it)."""
        fields = obj.__pydantic_fields_set__
        cls = type(obj)
        if not cls.model_config.get("frozen"):
            return fields
        seen = self._sets.setdefault(cls, [])
        for same in seen:  # a class has a few distinct sets: compared, cheaper than hashing each
            if same == fields:
                return same
        if len(seen) < _SHARED_SETS:
            seen.append(fields)
        return fields


_SHARED_SETS = 16
"""Distinct fields sets shared per class and pickle; a model with another is sent its own."""

_GETSTATE = BaseModel.__getstate__
_SETSTATE = BaseModel.__setstate__


def rebuilt_model(cls: type[BaseModel], values: dict[str, Any], fields_set: set[str]) -> BaseModel:
    """A model from the fields `dumps` sent (no validation: they were a valid model's)."""
    return unchecked(cls, values, fields_set)


_lock = threading.Lock()
_worker: _Worker | None = None
_extracted = 0  # passages this process has extracted so far
_lost = False  # a worker died: the rest of this process's extraction stays in threads


def _ready_worker(chunks: int) -> _Worker | None:
    """The worker for a batch of `chunks` passages, started on first need; None for a batch that
    stays in a thread, on a one-core machine, in a frozen program (no interpreter to start) or
    after a worker died."""
    global _worker, _extracted, _lost
    if (os.cpu_count() or 1) < 2 or getattr(sys, "frozen", False):
        return None
    with _lock:
        _extracted += chunks
        total = _extracted if early.get() else chunks
        if total < MIN_OFFLOAD_CHUNKS:
            return None
        if _worker is None and not _lost:
            try:
                _worker = _Worker()
            except OSError as exc:
                log.warning("could not start the extraction worker process (%s); extraction stays in threads", exc)
                _lost = True
        return _worker


def _drop(worker: _Worker) -> None:
    global _worker, _lost
    with _lock:
        if _worker is worker:
            _worker, _lost = None, True
    worker.close()


@atexit.register
def _close_worker() -> None:
    if _worker is not None:
        _worker.close()


@dataclass
class Tally:
    """Passages the worker extracted for the calls made inside `tallied`."""

    sent: int = 0


_tally: ContextVar[Tally | None] = ContextVar("evigraph_offload_tally", default=None)


@contextlib.contextmanager
def tallied() -> Iterator[Tally]:
    """Count the passages the worker extracts for calls made inside, in this task (and tasks it
    starts), not in one running beside it: a batch whose count moved had its extraction's
    temporaries in the worker, not here (`IngestRun._extract`), and an ingest may have two
    batches out at once."""
    tally = Tally()
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


async def run_offloaded(fn: Callable[..., T], *args: object, chunks: int) -> T:
    """`fn(*args)` in the worker process for a batch of `MIN_OFFLOAD_CHUNKS` passages (`chunks`),
    or under `early` once this process has extracted that many, else in a thread. `fn` and its
    arguments must pickle (a module-level function)."""
    worker = _ready_worker(chunks)
    if worker is not None:
        try:
            result = await asyncio.to_thread(worker.call, fn, args)
            if (tally := _tally.get()) is not None:
                tally.sent += chunks
            return result
        except _WorkerLost as exc:
            log.warning("the extraction worker process died (%s); extraction goes on in threads", exc)
            _drop(worker)
        except _NotSent:
            log.debug("a batch that does not pickle is extracted in a thread", exc_info=True)
    return await asyncio.to_thread(fn, *args)


def serve() -> None:
    """The worker's loop: a pickled `(fn, args)` in, a pickled `(ok, result or exception)` out,
    until its input ends."""
    global IN_WORKER
    IN_WORKER = True
    collect_rarely()  # a batch's models die uncollected (`evigraph.ingest.gc_threshold`)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the ingest, which then closes the pipe
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not land in the replies
    while True:
        try:
            fn, args = pickle.load(requests)
        except EOFError:
            return
        reply: tuple[bool, Any]
        try:
            reply = (True, fn(*args))
        except Exception as exc:
            reply = (False, exc)
        try:
            data = dumps(reply)
        except Exception as exc:  # an exception (or result) that does not pickle
            data = pickle.dumps((False, RuntimeError(f"{reply[1]!r} could not be sent back: {exc}")))
        replies.write(data)
        replies.flush()


if __name__ == "__main__":
    # Run from the package's own module object, so `IN_WORKER` is set where functions see it.
    from evigraph.ingest.extraction import offload

    offload.serve()
