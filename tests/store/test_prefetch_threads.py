"""Background imports started as a store opens must finish before the process exits.

A daemon thread still importing numpy when the interpreter shut down crashed it
with SIGSEGV about once in 40 runs on a busy machine: `evigraph ingest --db TEXTFILE` printed
its error and then died with -11 instead of exiting 1.
"""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import sys, threading
from evigraph.store.index_files import prefetch_numpy
assert "numpy" not in sys.modules, "numpy already imported: the prefetch would start no thread"
prefetch_numpy()
print(sorted((t.name, t.daemon) for t in threading.enumerate() if t.name.startswith("evigraph-")))
"""


def test_prefetch_threads_are_joined_at_exit_and_finish_cleanly() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[('evigraph-numpy', False)]"
    # the threads ran to their end during shutdown: an import failing there prints a traceback
    assert "Traceback" not in proc.stderr and "Exception in thread" not in proc.stderr, proc.stderr
