"""Interleaved latency: every system of a dataset loaded in one process and asked in turn.

Timing each system in its own process one after another measures the machine's load as much as
the system (a busy run once showed evigraph+minilm at 0.08x dense, though it embeds the same
question and does more). Asking all systems the same question back to back, with the order
rotated per question, exposes them to the same load, threads and caches.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

# A timed call: question -> ranked passage ids (the floor returns none).
Ask = Callable[[str], Awaitable[Sequence[str]]]


def rotated(names: Sequence[str], shift: int) -> list[str]:
    """`names` started at position `shift` (mod len): over len(names) questions each name is asked
    first, second, ... once, so no system always runs on the caches another one just warmed."""
    if not names:
        return []
    s = shift % len(names)
    return [*names[s:], *names[:s]]


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(seconds, dtype=float) * 1000, q))


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b rounded for a report, None where either is missing or b is zero."""
    return round(a / b, 2) if a is not None and b else None


async def interleave(
    asks: dict[str, Ask], questions: Sequence[str], warmups: Sequence[str]
) -> tuple[dict[str, list[float]], dict[str, list[list[str]]]]:
    """Seconds per question and ranked ids per question, per system, asked in rotated order.

    Every system first answers all `warmups` (untimed; questions not in the timed set, so no
    system is timed on an answer it cached during the warm-up).
    """
    names = list(asks)
    for w in warmups:
        for name in names:
            await asks[name](w)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    ranked: dict[str, list[list[str]]] = {n: [] for n in names}
    for i, question in enumerate(questions):
        for name in rotated(names, i):
            t0 = time.perf_counter()
            ids = await asks[name](question)
            seconds[name].append(time.perf_counter() - t0)
            ranked[name].append(list(ids))
    return seconds, ranked
