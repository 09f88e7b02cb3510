"""Helpers shared by the bench scripts: peak memory, per-system child processes, matplotlib."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DATA_HELP = (
    "The bench datasets are not in the repository: the scripts read them from ../shared/bench beside the "
    "checkout (run them from the repository root), one folder per dataset (musique, 2wikimultihopqa, "
    "hotpotqa) holding corpus.jsonl and questions.jsonl, formats in ../shared/bench/README.md. Put a copy "
    "there, or pass --data (--corpus for ingest.py and crash.py) naming yours."
)


def warn_foreign_source() -> None:
    """Say so when `evigraph` would be imported from another checkout than this bench's.

    setuptools' editable install puts its finder before PYTHONPATH, so a bench run from a second
    worktree (a baseline) silently measured the code of the checkout installed last, and its child
    processes the code as it stood when each started."""
    import importlib.util

    spec = importlib.util.find_spec("evigraph")
    repo = Path(__file__).resolve().parents[1]
    if spec is not None and spec.origin and not Path(spec.origin).resolve().is_relative_to(repo):
        print(
            f"warning: evigraph is imported from {Path(spec.origin).parent}, not from this checkout ({repo}/src): "
            f"run `pip install --no-deps -e {repo}` first, or uninstall the editable install and set PYTHONPATH",
            file=sys.stderr,
        )


warn_foreign_source()


def require_bench_files(*paths: Path) -> None:
    """Stop with a non-zero exit, naming what is missing and where the data belongs, unless every
    path is a file.

    Called before any phase runs: on a clone without the data, every phase used to fail on its
    own and the script still exited 0, which read as a finished benchmark.
    """
    missing = [p for p in paths if not p.is_file()]
    if missing:
        names = ", ".join(str(p) for p in missing)
        raise SystemExit(f"bench data not found: {names}\n{BENCH_DATA_HELP}")


def require_dataset(data: Path, db: Path | None = None) -> None:
    """A dataset folder's questions, and its corpus unless `db` (a knowledge base to reuse) exists."""
    files = [data / "questions.jsonl"]
    if db is None or not db.exists():
        files.append(data / "corpus.jsonl")
    require_bench_files(*files)


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


MCP_START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def mcp_server(
    db: Path, log: Path, *, extra_args: Sequence[str] = (), env_extra: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`evigraph mcp --transport http` on a free loopback port, with no EVIGRAPH_ variable of the
    caller's leaking in; yields (url, process) once it listens, and stops it afterwards."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    env.update(env_extra or {})
    argv = [sys.executable, "-m", "evigraph", "mcp", "--db", str(db), "--transport", "http", *extra_args]
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*argv, "--host", "127.0.0.1", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            env=env,
        )
    try:
        deadline = time.monotonic() + MCP_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the MCP server exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the MCP server did not listen within {MCP_START_TIMEOUT_S:.0f} s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
