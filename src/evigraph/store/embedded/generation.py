"""The write generation: a counter in the file that every write changing retrieval's data bumps.

Indexes saved beside the file (`store/index_files.py`) name the generation they were built at;
one whose generation is not the file's current one is not used. The counter is bumped inside the
write's own transaction, so it cannot drift from the data: a write that rolls back leaves it,
one that commits moves it. The file's identity (a random id set by its first bump) is part of
the generation, so a knowledge base deleted and made again at the same path, whose counter
starts over, never matches the indexes of the old one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TypeVar

from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import META_TABLE

COUNTER = "write_generation"
IDENTITY = "store_identity"

T = TypeVar("T")


def bumping(fn: Callable[[Tx], T]) -> Callable[[Tx], T]:
    """`fn`, then a bump, in one transaction: for every write that changes what retrieval derives."""

    def work(tx: Tx) -> T:
        out = fn(tx)
        bump(tx)
        return out

    return work


def moving(fn: Callable[[Tx], T]) -> Callable[[Tx], tuple[T, str | None, str | None]]:
    """`bumping`, also giving the generation before and after: a write that changes what only some
    indexes read relabels the others' saved files (`SavedIndexes.relabel`), which are still the
    data's. Read in the write's own transaction, so no other write comes between the two."""

    def work(tx: Tx) -> tuple[T, str | None, str | None]:
        before = current(tx)
        out = fn(tx)
        bump(tx)
        return out, before, current(tx)

    return work


def bump(tx: Tx) -> None:
    tx.execute(
        f"MERGE (m:{META_TABLE} {{key: $counter}}) ON CREATE SET m.value = '1' "
        "ON MATCH SET m.value = CAST(CAST(m.value AS INT64) + 1 AS STRING) "
        f"MERGE (s:{META_TABLE} {{key: $identity}}) ON CREATE SET s.value = $id",
        {"counter": COUNTER, "identity": IDENTITY, "id": uuid.uuid4().hex},
    ).close()


def current(tx: Tx) -> str | None:
    """The generation as the indexes name it, or None for a file no write of this release has
    bumped yet (its indexes are then built in memory, as before, and not saved)."""
    found = {
        r["k"]: r["v"]
        for r in tx.rows(
            f"MATCH (m:{META_TABLE}) WHERE m.key IN [$counter, $identity] RETURN m.key AS k, m.value AS v",
            {"counter": COUNTER, "identity": IDENTITY},
        )
    }
    if not found.get(COUNTER) or not found.get(IDENTITY):
        return None
    return f"{found[IDENTITY]}:{found[COUNTER]}"
