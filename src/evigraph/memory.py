"""Giving freed memory back to the system.

glibc keeps the blocks a program frees for reuse, per arena, and a process whose threads allocate
in bursts (a model's activations, the engine's transaction, a batch's parameter rows) holds the
high-water mark of every burst. An ingest of hotpotqa with MiniLM ended with 2,223 MB resident of
which 763 MB was in use; `malloc_trim` then gave back 506 MB of 1,611 (2wikimultihopqa). Elsewhere
(musl, macOS, Windows) there is nothing to call, and nothing is lost.

A trim every second for the whole ingest did not lower that ingest's peak (2,334 -> 2,319 MB):
the peak was memory in use, a statement's parameter rows (`executor.BATCH_VALUES`), so callers
trim where a burst has ended instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys


def give_back_memory() -> None:
    """Return the memory freed since the last call to the system."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def resident_bytes() -> int | None:
    """This process's resident memory now, None where the system does not say (Linux's
    `/proc/self/statm` only): what a caller weighs a trim, or a query's memory budget, by."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
