"""Each source's last outcome (`SourceLog`) read back, written once for both backends; a backend
gives how its stored time reads as ISO 8601 UTC text."""

from __future__ import annotations

from typing import Any

from evigraph.models import SourceRecord, SourceState

SOURCE_FIELDS = (
    "s.key AS key, s.state AS state, s.content_hash AS hash, s.version AS version, s.error AS error, s.at AS at"
)


def source_record(row: dict[str, Any], at: str | None) -> SourceRecord:
    """The record of a row read as `SOURCE_FIELDS`, its time given as `at`."""
    return SourceRecord(
        key=row["key"],
        state=SourceState(row["state"]),
        content_hash=row["hash"],
        version=int(row["version"] or 0),
        error=row["error"],
        at=at,
    )
