"""What compacting a knowledge base reports, whatever store holds it.

An embedded database file only grows: the engine reuses the pages that deletes and rewrites free
in a later session at best, and never gives them back to the file system (measurements in
`store/embedded/compaction.py`). Compacting rewrites the knowledge base without them. A server
store whose engine manages its own space reports that nothing was replaced.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

CompactProgress = Callable[[str, int, int], None]
"""Called as a compaction goes: (stage, done, total). Stages: `copy` counts rows, `index` and
`verify` count tables; called from a worker thread. An exception it raises stops the compaction,
which then leaves the knowledge base as it was."""


class CompactReport(BaseModel):
    """What `compact` did: the bytes the knowledge base took on disk before and after."""

    db: str = Field(description="the knowledge base compacted")
    bytes_before: int = Field(description="the database file and the engine's files beside it, before")
    bytes_after: int = Field(description="the same, after (equal to bytes_before when nothing was replaced)")
    rows: int = Field(0, description="rows copied into the new file: nodes and relationships of every table")
    seconds: float = Field(0.0, description="how long it took")
    replaced: bool = Field(
        False,
        description="whether the knowledge base was replaced; false when the rewrite was not smaller "
        "(the old file is kept) or the store has nothing to compact",
    )
    reopen_error: str = Field(
        "",
        description="set when the knowledge base was replaced but this process could not open it again "
        "(another process opened the compacted file first): why; the store is then closed. The "
        "compaction itself is done and the file intact",
    )

    @property
    def saved(self) -> int:
        """Bytes given back to the file system."""
        return self.bytes_before - self.bytes_after
