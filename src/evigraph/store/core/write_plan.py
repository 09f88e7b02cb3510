"""Node writes planned once, run by each backend its own way.

A trace or decision write is worked out in backend-neutral code (`trace_writes`,
`decision_writes`): it reads what it checks, then says which nodes to create, merge, update or
delete. How those writes stay whole is the backend's: the embedded store runs the plan's steps in
the transaction that read the checks; the FalkorDB store runs the whole plan as one query under
the project's lock, guarded by the document versions it requires (`require_versions`). Times in
the rows are aware datetimes; each backend stores them its own way (naive UTC on the file, ISO
text on the server).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Op = Literal["create", "merge", "update", "delete"]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Step:
    """One kind of write to the nodes of one label: `create` (new nodes), `merge` (create or
    update by `id`), `update` (existing nodes by `id`; a missing one stays missing) or `delete`
    (by `id`; each row holds only its id)."""

    op: Op
    label: str
    rows: list[dict[str, Any]]


class WritePlan:
    """The writes of one change, in the order they apply."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.versions: dict[str, int] = {}
        """Document key -> the version the writes rest on: a backend whose checks and writes are not
        one transaction must refuse the plan when one no longer holds."""
        self.refused: Callable[[], None] | None = None
        """Raises the caller's error when a required version no longer held."""

    def _add(self, op: Op, label: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.steps.append(Step(op, label, rows))

    def create(self, label: str, rows: list[dict[str, Any]]) -> None:
        self._add("create", label, rows)

    def merge(self, label: str, rows: list[dict[str, Any]]) -> None:
        self._add("merge", label, rows)

    def update(self, label: str, rows: list[dict[str, Any]]) -> None:
        self._add("update", label, rows)

    def delete(self, label: str, ids: list[str]) -> None:
        self._add("delete", label, [{"id": i} for i in ids])

    def require_versions(self, versions: Mapping[str, int], refused: Callable[[], None]) -> None:
        """Adds to what the plan requires (a second check of supports must not drop the first's
        guard); one document required at two versions cannot both hold, so it is refused now."""
        clash = [k for k, v in versions.items() if self.versions.get(k, v) != v]
        if clash:
            refused()
        self.versions.update(versions)
        self.refused = refused


def stored(row: Mapping[str, Any], store_time: Callable[[datetime], Any]) -> dict[str, Any]:
    """`row` with its times as the backend stores them."""
    return {k: store_time(v) if isinstance(v, datetime) else v for k, v in row.items()}
