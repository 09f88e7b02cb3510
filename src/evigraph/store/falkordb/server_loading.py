"""Waiting for a local FalkorDB server that reads its data back, and saying how far it got.

A server with data listens at once but answers nothing but `LOADING` until it has read its log
back, and while it replays the log's commands it answers nothing at all between batches of 1,024
of them (Redis serves clients that often: ~11 s of silence for a log of evigraph's queries, which
a log written before its writes were logged as effects holds). So progress comes from the
server's own account (`INFO persistence`: `loading_*`) when it answers, else from the bytes the
process has read (`/proc/PID/io`, Linux), against the size of its files; and the wait is bounded
by that size, at a rate well below the slowest measured.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOAD_FLOOR_BYTES_PER_S = 1 << 20
"""The slowest loading `start` waits for: 1 MiB/s, a tenth of the slowest rate measured for what
the server writes (its snapshot, 13-31 MB/s; its log of effects, ~50 MB/s; see
`server_config.EFFECTS`). A log of queries an earlier evigraph left (0.6-5 MB/s, and far slower
from an empty log) can outlast the wait: `start` then says so and the server carries on."""
LOAD_WAIT_MIN_S = 120.0
"""The least `start` waits for a server reading its data back: a log replays queries, not their
effects, so a few bytes can take long (four 100-byte queries creating 2,000,000 nodes in all)."""

Progress = Callable[["LoadProgress"], None]


@dataclass(frozen=True)
class LoadProgress:
    """How far a starting server has read its data back, and how long `start` waits for it."""

    elapsed_s: float
    bound_s: float
    total_bytes: int
    loaded_bytes: int | None = None
    eta_s: float | None = None
    answering: bool = True
    """Whether the server answered `INFO` (else the figures are the bytes its process read)."""

    def amount(self) -> str:
        """How much is read: a share of the data when the figures are known."""
        total = _mb(self.total_bytes)
        if self.loaded_bytes is None:
            done = f"reading back {total} of data"
        else:
            share = min(100.0, 100.0 * self.loaded_bytes / self.total_bytes) if self.total_bytes else 0.0
            done = f"loaded {share:.0f}% ({_mb(self.loaded_bytes)} of {total})"
        if self.eta_s is not None and self.eta_s >= 0:
            done += f", about {self.eta_s:.0f} s left"
        if not self.answering:
            done += " (replaying its log: not answering)"
        return done

    def describe(self) -> str:
        """One line for a person: how much is read, how long so far, and the wait's bound."""
        return f"{self.amount()}; {self.elapsed_s:.0f} s so far, waiting up to {self.bound_s:.0f} s"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def data_bytes(folder: Path) -> int:
    """The bytes a server started from `folder` reads back: its append-only log when it has one
    (the log is what Redis loads then), else its snapshot."""
    log = folder / "appendonlydir"
    if log.is_dir():
        return sum(p.stat().st_size for p in log.iterdir() if p.is_file())
    snapshot = folder / "dump.rdb"
    return snapshot.stat().st_size if snapshot.is_file() else 0


def load_bound(timeout: float, total_bytes: int) -> float:
    """How long `start` waits for a server reading back `total_bytes`: its start timeout plus the
    data read at `LOAD_FLOOR_BYTES_PER_S`, and `LOAD_WAIT_MIN_S` at least."""
    return max(LOAD_WAIT_MIN_S, timeout + total_bytes / LOAD_FLOOR_BYTES_PER_S)


def progress(client: Any, pid: int, total: int, elapsed: float, bound: float) -> LoadProgress:
    """Where the loading stands: the server's `loading_*` fields if it answers in time, else the
    bytes its process has read so far (`rchar`, which the log and snapshot reads dominate)."""
    try:
        info = client.info("persistence")
    except Exception:  # busy replaying: ask the kernel instead
        return LoadProgress(elapsed, bound, total, _bytes_read(pid), answering=False)
    if not int(info.get("loading", 0) or 0):
        return LoadProgress(elapsed, bound, total, total)
    eta = info.get("loading_eta_seconds")
    return LoadProgress(
        elapsed,
        bound,
        int(info.get("loading_total_bytes") or total),
        int(info.get("loading_loaded_bytes") or 0),
        float(eta) if eta is not None else None,
    )


def _bytes_read(pid: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return None
