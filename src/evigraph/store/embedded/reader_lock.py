"""A read-only open's shared lock on the database file, held until the store closes.

Kuzu 0.11.3 holds a shared lock on the file for as long as a read-only database is open: a writer
in another process is refused ("Could not set lock on file"), and so is a read-only open while a
writer holds the file. LadybugDB 0.22 takes that lock only while it replays the log at open and
then drops it, so a reader and a writer in two processes share the file with nothing between
them: the writer's checkpoints rewrite pages the reader may still read (its maintainers' issue
#666). Measured here on 0.22: with a read-only process holding the file, another process opened
it writable, added 199,000 rows and checkpointed; and a read-only open succeeded while a writer
held it. evigraph's own processes (an ingest beside a read-only `evigraph mcp`, a compaction
beside a reader) relied on Kuzu's refusal.

So a read-only store takes the shared lock itself and keeps it: an open file description lock
(`F_OFD_SETLK`), which conflicts with the engines' own record locks on the file in any process,
writers' included, and is not dropped when this process closes some other descriptor of the file
(a record lock would be: reading the engine's magic bytes would release it). A writer needs none:
both engines hold their exclusive lock while open. Where the platform has no such lock (not
Linux), the engine's own locking is all there is.
"""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

from evigraph.store.embedded.engine import locked_by_writer


def hold_shared(path: Path) -> int | None:
    """A descriptor of `path` holding a shared lock on the whole file, to close at the store's
    close; None where the platform has no open file description locks.

    Raises `DatabaseLockedError` while a writer (any process's engine) holds the file."""
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    setlk = getattr(fcntl, "F_OFD_SETLK", None)
    if setlk is None:  # not Linux
        return None
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        # struct flock: l_type, l_whence, l_start, l_len (0: to the end), l_pid (0 for these locks)
        fcntl.fcntl(fd, setlk, struct.pack("hhqqi4x", fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0))
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise locked_by_writer(path) from exc
        if exc.errno == errno.EINVAL:  # a file system without these locks: the engine's own only
            return None
        raise
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)
