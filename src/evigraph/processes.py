"""Ending a worker process that reads requests on its stdin: the extraction offload's and the
Cypher worker's end the same way, so they share it."""

from __future__ import annotations

import contextlib
import subprocess
from typing import Any

END_WAIT_SECONDS = 5.0
"""How long a worker whose input was closed gets to finish its request and exit before it is killed."""


def end_worker(proc: subprocess.Popen[Any], wait: float = END_WAIT_SECONDS) -> None:
    """Close the worker's input (it ends at the end of its input), kill it if it has not ended
    within `wait` seconds, and close its pipes."""
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        kill_worker(proc)
    close_pipes(proc)


def kill_worker(proc: subprocess.Popen[Any]) -> None:
    """Kill the worker now (a call that must not wait on it), reap it and close its pipes."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()
    close_pipes(proc)


def close_pipes(proc: subprocess.Popen[Any]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if pipe is not None:
                pipe.close()
