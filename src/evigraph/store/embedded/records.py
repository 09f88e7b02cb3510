"""Bookkeeping beside the graph: settings, each source's last outcome, themes, the schema.

These are small tables the toolkit reads to answer questions about the knowledge base itself
(is this file current? which clusters exist? what may a Cypher query name?), kept apart from
the document writes so those stay one tight transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from evigraph.models import SourceRecord, SourceState, TableInfo, ThemeRecord
from evigraph.store.base import EXTRACTION_KIND
from evigraph.store.core.source_rows import SOURCE_FIELDS, source_record
from evigraph.store.cypher.rules import HIDDEN_PROPERTIES
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import EXTRACTION_CACHE, INTERNAL_TABLES, META_TABLE

_SAMPLE_KEYS = 3


def set_meta(tx: Tx, key: str, value: str | None) -> None:
    tx.execute(f"MERGE (m:{META_TABLE} {{key: $k}}) SET m.value = $v", {"k": key, "v": value}).close()


def log_sources(tx: Tx, records: Sequence[SourceRecord]) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = [
        {
            "key": r.key,
            "state": r.state.value,
            "hash": r.content_hash,
            "version": r.version,
            "error": r.error,
            "at": now,
        }
        for r in {r.key: r for r in records}.values()  # MERGE keys must be unique per statement
    ]
    tx.run_batched(
        """UNWIND $rows AS r WITH r.key AS key, r.state AS state, r.hash AS hash, r.version AS version,
               r.error AS error, r.at AS at
           MERGE (s:SourceLog {key: key})
           SET s.state = state, s.content_hash = CAST(hash AS STRING), s.version = version,
               s.error = CAST(error AS STRING), s.at = at""",
        rows,
    )


def source_log(tx: Tx, keys: Sequence[str]) -> dict[str, SourceRecord]:
    rows = tx.rows(
        f"UNWIND $keys AS k MATCH (s:SourceLog {{key: k}}) RETURN {SOURCE_FIELDS}",
        {"keys": list(keys)},
    )
    return {r["key"]: _source_record(r) for r in rows}


def _source_record(row: dict[str, Any]) -> SourceRecord:
    return source_record(row, row["at"].isoformat() + "Z" if row["at"] else None)


def failed_sources(tx: Tx, limit: int) -> list[SourceRecord]:
    rows = tx.rows(
        f"MATCH (s:SourceLog) WHERE s.state = $failed RETURN {SOURCE_FIELDS} ORDER BY s.at DESC, s.key LIMIT $limit",
        {"failed": SourceState.failed.value, "limit": limit},
    )
    return [_source_record(r) for r in rows]


def count_failed_sources(tx: Tx) -> int:
    failed = {"failed": SourceState.failed.value}
    return int(tx.column("MATCH (s:SourceLog) WHERE s.state = $failed RETURN count(s)", failed)[0])


def cached_extractions(tx: Tx, keys: Sequence[str], kind: str) -> dict[str, str]:
    stored = {_cache_key(kind, k): k for k in keys}
    rows = tx.rows(
        f"UNWIND $keys AS k MATCH (c:{EXTRACTION_CACHE} {{key: k}}) RETURN c.key AS key, c.value AS value",
        {"keys": list(stored)},
    )
    return {stored[r["key"]]: r["value"] for r in rows}


def cache_extractions(tx: Tx, entries: dict[str, str], kind: str) -> None:
    tx.run_batched(
        f"UNWIND $rows AS r WITH r.key AS key, r.value AS value MERGE (c:{EXTRACTION_CACHE} {{key: key}}) "
        "SET c.value = value",
        [{"key": _cache_key(kind, k), "value": v} for k, v in entries.items()],
    )


def _cache_key(kind: str, key: str) -> str:
    """The row key of a cached result: extractions keep the bare keys they were cached under
    before the cache held other kinds, so knowledge bases cached by then still hit."""
    return key if kind == EXTRACTION_KIND else f"{kind}:{key}"


def replace_themes(tx: Tx, themes: Sequence[ThemeRecord], run: str) -> None:
    tx.execute("MATCH (t:Theme) DELETE t").close()
    tx.run_batched(
        """UNWIND $rows AS r CREATE (:Theme {id: r.id, members: CAST(r.members AS STRING[]),
               names: CAST(r.names AS STRING[]), labels: CAST(r.labels AS STRING[]), size: r.size, run: $run})""",
        [t.model_dump() for t in themes],
        extra={"run": run},
    )


def themes(tx: Tx) -> list[ThemeRecord]:
    rows = tx.rows(
        """MATCH (t:Theme) RETURN t.id AS id, t.members AS members, t.names AS names, t.labels AS labels,
               t.size AS size ORDER BY t.size DESC, t.id"""
    )
    return [ThemeRecord(**{**r, "size": int(r["size"] or 0)}) for r in rows]


def schema_tables(tx: Tx) -> list[TableInfo]:
    """The graph's tables as a Cypher author needs them: properties, row counts, sample keys."""
    out = []
    for t in tx.rows("CALL SHOW_TABLES() RETURN name, type ORDER BY name"):
        name, kind = t["name"], str(t["type"]).upper()
        if name in INTERNAL_TABLES or kind not in ("NODE", "REL"):
            continue
        props = {
            p["name"]: str(p["type"])
            for p in tx.rows(f"CALL TABLE_INFO('{name}') RETURN name, type")
            if p["name"] not in HIDDEN_PROPERTIES
        }
        info = TableInfo(name=name, kind="node" if kind == "NODE" else "relationship", properties=props)
        if kind == "NODE":
            info.rows = int(tx.column(f"MATCH (n:{name}) RETURN count(n)")[0])
            key = next(iter(props), None)
            if key:
                info.sample_keys = [
                    str(v) for v in tx.column(f"MATCH (n:{name}) RETURN n.{key} LIMIT {_SAMPLE_KEYS}") if v
                ]
        else:
            info.rows = int(tx.column(f"MATCH ()-[r:{name}]->() RETURN count(r)")[0])
            info.connects = [
                (c["a"], c["b"])
                for c in tx.rows(
                    f"CALL SHOW_CONNECTION('{name}') RETURN `source table name` AS a, `destination table name` AS b"
                )
            ]
        out.append(info)
    return out
