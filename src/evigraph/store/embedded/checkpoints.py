"""How much write-ahead log the engine gathers before it checkpoints, grown with the file.

Kuzu 0.11.3 checkpoints when the log passes `checkpoint_threshold` (16 MB by default), and a
checkpoint rewrites every node group of a relationship table that received a row, so on a graph
whose new relations join old entities it costs time in proportion to the table, not to the log:
one after 1,000 new relations took 0.3 s among 130,000 relations and 81 s among 1.3 million
(with a 4 GB buffer pool; 74 s with 512 MB). With a fixed threshold, an ingest of N passages then
pays N/threshold checkpoints of a cost growing with N: quadratic. Letting the log grow in
proportion to the file keeps the checkpoints geometric, so their total stays proportional to the
final size; the price is memory, as the engine holds what the log holds until it checkpoints,
hence a cap.

Measured on 10,000 generated passages (bench/scale.py's corpus, rules extractor, no embedder):
the fixed 16 MB gave 159 commits costing 12.0 s in all and a 294 MB file; a fixed 256 MB, 2.3 s
and 135 MB (fewer checkpoints also leave fewer free pages behind, see `compaction`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evigraph.store.embedded.executor import Tx

SHARE = 0.5
"""Log allowed before a checkpoint, as a share of the file: each checkpoint then comes after the
file has grown by about half, so their costs form a geometric series."""

FLOOR_BYTES = 16 << 20
"""The engine's own default: a small knowledge base checkpoints as it always did."""

CAP_BYTES = 1 << 30
"""At most this much log waits for a checkpoint."""

POOL_SHARE = 0.25
"""And at most this share of the buffer pool: the engine keeps what the log holds in its pool
until it checkpoints. With the whole 512 MB pool allowed (a 1 GB cap), a 100,000-passage ingest
failed within its first minute: "Unable to allocate memory! The buffer pool is full"."""


def threshold(file_bytes: int, pool_bytes: int = 1 << 40) -> int:
    cap = min(CAP_BYTES, int(pool_bytes * POOL_SHARE))
    return int(min(max(file_bytes * SHARE, FLOOR_BYTES), max(cap, FLOOR_BYTES)))


@dataclass
class CheckpointPacing:
    """Sets the threshold from the file's size at the start of each write transaction."""

    path: Path
    pool_bytes: int
    current: int = 0

    def pace(self, tx: Tx) -> None:
        try:
            size = self.path.stat().st_size
        except OSError:
            return
        wanted = threshold(size, self.pool_bytes)
        if wanted != self.current and not self.current * 0.8 <= wanted <= self.current * 1.25:
            tx.execute(f"CALL checkpoint_threshold={wanted}").close()
            self.current = wanted
