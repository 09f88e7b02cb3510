"""Helpers shared by the bench scripts: peak memory, per-system child processes, matplotlib."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class ChildResult:
    """Outcome of one bench child process: its JSON answer (last stdout line) or its error tail."""

    ok: bool
    seconds: float
    data: dict[str, Any]
    error: str = ""


def run_child(argv: Sequence[str], env: dict[str, str] | None = None, tail: int = 2000) -> ChildResult:
    """Run `python argv...` in a fresh process; it must print one JSON object as its last stdout line."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
        return ChildResult(False, seconds, {}, f"{(proc.stderr or proc.stdout)[-tail:]}\n[child {how}]")
    try:
        return ChildResult(True, seconds, json.loads(proc.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError) as e:
        return ChildResult(False, seconds, {}, f"bad child output ({e}): {proc.stdout[-tail:]}{proc.stderr[-tail:]}")


def pyplot() -> Any | None:
    """matplotlib.pyplot on the Agg backend, or None (with a hint on stderr) if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install 'evigraph[bench]'): no plot", file=sys.stderr)
        return None
    return plt
