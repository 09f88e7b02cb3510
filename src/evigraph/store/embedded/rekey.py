"""`rename_documents` on the embedded store: one transaction, so a refused or failed rename
leaves every key as it was (the shared rules are in `store/core/rekey.py`).

The engine cannot change a primary key, so a renamed document and its source-log row are
written anew beside the old ones, the passages' `PART_OF` edges moved to the new document, and
the old rows deleted; the passages themselves are not touched beyond their `document` column.
"""

from __future__ import annotations

from collections.abc import Mapping

from evigraph.store.core.rekey import LEGACY_PREFIXES, collision, legacy_key_query, renamed_json
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_STEP, TRACE_SUPPORT, VERSION_SEQ
from evigraph.store.embedded.executor import Tx

_DOC_COLUMNS = ("title", "path", "content_hash", "version", "loader", "metadata", "chunk_count", "ingested_at")
_LOG_COLUMNS = ("state", "content_hash", "version", "error", "at")


def rename_documents(tx: Tx, renames: Mapping[str, str]) -> list[str]:
    """Rename each stored key in `renames` (document or source-log row); the old keys renamed."""
    olds, news = list(renames), list(renames.values())
    taken = tx.column("UNWIND $keys AS k MATCH (d:Document {key: k}) RETURN d.key", {"keys": news})
    taken += tx.column("UNWIND $keys AS k MATCH (s:SourceLog {key: k}) RETURN s.key", {"keys": news})
    held = {*tx.column("UNWIND $keys AS k MATCH (d:Document {key: k}) RETURN d.key", {"keys": olds})}
    logged = {*tx.column("UNWIND $keys AS k MATCH (s:SourceLog {key: k}) RETURN s.key", {"keys": olds})}
    clash = sorted({k for k in taken if _source(renames, k) in held | logged})
    if clash:
        raise collision(clash, renames)
    for old in sorted(held):
        _move_document(tx, old, renames[old])
    for old in sorted(logged):
        params = {"old": old, "new": renames[old]}
        copied = ", ".join(f"{c}: s.{c}" for c in _LOG_COLUMNS)
        tx.execute(f"MATCH (s:SourceLog {{key: $old}}) CREATE (:SourceLog {{key: $new, {copied}}})", params).close()
        tx.execute("MATCH (s:SourceLog {key: $old}) DELETE s", {"old": old}).close()
    done = {old: renames[old] for old in held | logged}
    if done:
        _rewrite_traces(tx, done)
    return sorted(done)


def _source(renames: Mapping[str, str], new: str) -> str:
    return next(old for old, target in renames.items() if target == new)


def _move_document(tx: Tx, old: str, new: str) -> None:
    params = {"old": old, "new": new}
    copied = ", ".join(f"{c}: d.{c}" for c in _DOC_COLUMNS)
    tx.execute(f"MATCH (d:Document {{key: $old}}) CREATE (:Document {{key: $new, {copied}}})", params).close()
    tx.execute(
        """MATCH (c:Chunk)-[:PART_OF]->(:Document {key: $old}), (n:Document {key: $new})
           CREATE (c)-[:PART_OF]->(n)""",
        params,
    ).close()
    only_old = {"old": old}
    tx.execute("MATCH (c:Chunk)-[r:PART_OF]->(:Document {key: $old}) DELETE r", only_old).close()
    tx.execute("MATCH (c:Chunk) WHERE c.document = $old SET c.document = $new", params).close()
    # The old key's counter is kept at least at the version its passages were numbered with.
    tx.execute(
        f"""MATCH (d:Document {{key: $old}})
           MERGE (s:{VERSION_SEQ} {{key: $old}})
           ON CREATE SET s.n = d.version
           ON MATCH SET s.n = CASE WHEN s.n < d.version THEN d.version ELSE s.n END""",
        only_old,
    ).close()
    tx.execute(
        f"""MATCH (s:{VERSION_SEQ} {{key: $old}})
           MERGE (t:{VERSION_SEQ} {{key: $new}})
           ON CREATE SET t.n = s.n
           ON MATCH SET t.n = CASE WHEN t.n < s.n THEN s.n ELSE t.n END""",
        params,
    ).close()
    tx.execute("MATCH (d:Document {key: $old}) DELETE d", only_old).close()


def _rewrite_traces(tx: Tx, renames: Mapping[str, str]) -> None:
    for old, new in renames.items():
        tx.execute(
            f"MATCH (s:{TRACE_SUPPORT}) WHERE s.document = $old SET s.document = $new", {"old": old, "new": new}
        ).close()
    for table, column in ((TRACE_STEP, "supports"), (TRACE_DECISION, "review")):
        rows = tx.rows(f"MATCH (x:{table}) WHERE x.{column} <> '[]' RETURN x.id AS id, x.{column} AS text")
        for row in rows:
            text = renamed_json(row["text"], renames)
            if text is not None:
                tx.execute(
                    f"MATCH (x:{table} {{id: $id}}) SET x.{column} = $text", {"id": row["id"], "text": text}
                ).close()


def holds_legacy_keys(tx: Tx) -> bool:
    params = {"prefixes": LEGACY_PREFIXES}
    return any(tx.column(legacy_key_query(label), params) for label in ("Document", "SourceLog"))
