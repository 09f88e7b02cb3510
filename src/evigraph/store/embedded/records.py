"""Bookkeeping beside the graph: settings, each source's last outcome, themes, the schema.

These are small tables the toolkit reads to answer questions about the knowledge base itself
(is this file current? which clusters exist? what may a Cypher query name?), kept apart from
the document writes so those stay one tight transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from evigraph.models import SourceRecord, SourceState, TableInfo, ThemeRecord
from evigraph.store.embedded.cypher_rules import HIDDEN_PROPERTIES
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import INTERNAL_TABLES, META_TABLE

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
        """UNWIND $keys AS k MATCH (s:SourceLog {key: k})
           RETURN s.key AS key, s.state AS state, s.content_hash AS hash, s.version AS version,
                  s.error AS error, s.at AS at""",
        {"keys": list(keys)},
    )
    return {
        r["key"]: SourceRecord(
            key=r["key"],
            state=SourceState(r["state"]),
            content_hash=r["hash"],
            version=int(r["version"] or 0),
            error=r["error"],
            at=r["at"].isoformat() + "Z" if r["at"] else None,
        )
        for r in rows
    }


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
