"""Lists kept on relationships as space-separated text, not as engine lists.

Kuzu 0.11.3 checkpoints a relationship table by rewriting the node groups its new rows fall in,
and a list column makes that rewrite pathologically slow. Measured on 50,000 entities holding
130,000 relationships (what the rules extractor makes of 10,000 passages), the checkpoint after
1,000 relationships between random entities took:

  no property                                   0.04 s
  id STRING, fact STRING                        0.20 s
  id STRING, source_chunks STRING[]            47.6 s
  id STRING, source_chunks STRING (this)        0.27 s
  span_starts INT64[], span_ends INT64[]        0.56 s

List columns on node tables showed nothing of the kind (1,000 updates of a STRING[] among 500,000
nodes: 0.15 s). An ingest checkpoints every 16 MB of log, so on a 10,000-passage ingest the
checkpoints grew from 0.3 s to 9.6 s each and took 43 of its 90 s. Hence `RELATES.source_chunks`
holds passage ids separated by spaces (a passage id, `chunk_id`, never has one) and
`MENTIONED_IN.span_starts` / `span_ends` hold numbers the same way. In Cypher they read back as
lists with `string_split(r.source_chunks, ' ')`.

A file written before this change holds engine lists; a writable open converts them
(`RETYPED_COLUMNS`), and the readers here accept both, so a read-only open of an old file works.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

SEPARATOR = " "


def pack(values: Iterable[Any]) -> str:
    return SEPARATOR.join(map(str, values))


def unpack_ids(value: str | list[str] | None) -> list[str]:
    if not value:
        return []
    if isinstance(value, list):  # a file from before the change, opened read-only
        return value
    return value.split(SEPARATOR)


def unpack_ints(value: str | list[int] | None) -> list[int]:
    if not value:
        return []
    if isinstance(value, list):
        return [int(v) for v in value]
    return [int(v) for v in value.split(SEPARATOR)]
