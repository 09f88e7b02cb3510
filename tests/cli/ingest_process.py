"""A real `evigraph ingest` running in its own process, with its output read as it comes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

TOPICS = ("harbor", "reef", "tide", "sensor", "lagoon", "current", "plankton", "buoy")


def write_corpus(folder: Path, n: int) -> Path:
    """`n` small text files, each a few passages with names the rules extractor finds."""
    folder.mkdir()
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        paragraphs = [
            f"Station {i} of the {topic.title()} Network is run by Harbor Lab {i % 17} in Lisbon. "
            f"Marta Oliveira {i % 23} founded it in {1990 + i % 30}, with the Portuguese Sea Agency.",
            f"The {topic} survey {i} records water temperature, salinity and {topic} counts every hour. "
            + f"Data from station {i} feeds the {topic.title()} Atlas and the Ocean Monitoring Board. " * 3,
            f"In {2000 + i % 20}, Ana Costa {i % 11} moved the {topic} station {i} to the Berlengas islands.",
        ]
        (folder / f"note-{i:05d}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return folder


def child_env() -> dict[str, str]:
    """No EVIGRAPH_* setting of the developer's may leak in (an embedder would load a model)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evigraph", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        stdin=subprocess.DEVNULL,
    )


class IngestProcess:
    """`evigraph ingest CORPUS --db DB --extractor rules`, its stdout and stderr collected line by line."""

    def __init__(self, corpus: Path, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evigraph", "ingest", str(corpus), "--db", str(db), "--extractor", "rules"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=child_env(),
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._changed = threading.Condition()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._collect, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._collect, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _collect(self, stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with self._changed:
                into.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: str, *, stderr: bool = False, timeout: float = 120) -> float:
        """Block until a line matches `pattern`; returns when (time.monotonic()). Fails if the process ends first."""
        lines = self.err if stderr else self.out
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(regex.search(line) for line in lines):
                if self.proc.poll() is not None and not any(r.is_alive() for r in self._readers):
                    raise AssertionError(f"ingest ended before {pattern!r}: {''.join(self.err)[-2000:]}")
                left = deadline - time.monotonic()
                assert left > 0, f"no line matching {pattern!r} within {timeout} s; stderr: {''.join(self.err)[-2000:]}"
                self._changed.wait(min(left, 0.5))
        return time.monotonic()

    def interrupt(self) -> float:
        self.proc.send_signal(signal.SIGINT)
        return time.monotonic()

    def finish(self, timeout: float) -> int:
        """The exit code, once the process and its output have ended."""
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def written(self) -> list[str]:
        """The file names of the documents the ingest said it wrote."""
        return [Path(line.split()[1]).name for line in self.out if line.startswith("created ")]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
