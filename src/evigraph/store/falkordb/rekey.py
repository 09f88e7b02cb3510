"""`rename_documents` on FalkorDB (the shared rules are in `store/core/rekey.py`).

A key is a plain property here, so rows are renamed in place. The checks run first, on the
primary, and refuse before any write; the writes then follow as one query per kind of row.
"""

from __future__ import annotations

from collections.abc import Mapping

from evigraph.store.core.rekey import collision, renamed_json
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_STEP, TRACE_SUPPORT, VERSION_SEQ
from evigraph.store.falkordb.connection import Connection


def rename_documents(conn: Connection, renames: Mapping[str, str]) -> list[str]:
    """Rename each stored key in `renames` (document or source-log row); the old keys renamed."""

    def stored(keys: list[str]) -> set[str]:
        found = set()
        for label in ("Document", "SourceLog"):
            rows = conn.read_primary_sync(
                f"UNWIND $keys AS k MATCH (x:{label} {{key: k}}) RETURN x.key AS key", {"keys": keys}
            )
            found |= {r["key"] for r in rows}
        return found

    held = stored(list(renames))
    back = {new: old for old, new in renames.items()}
    clash = sorted(k for k in stored(list(renames.values())) if back[k] in held)
    if clash:
        raise collision(clash, renames)
    pairs = [{"old": old, "new": renames[old]} for old in sorted(held)]
    if not pairs:
        return []
    conn.write_sync(
        f"""UNWIND $pairs AS p
           MATCH (d:Document {{key: p.old}})
           MERGE (s:{VERSION_SEQ} {{key: p.old}})
           SET s.n = CASE WHEN coalesce(s.n, 0) < d.version THEN d.version ELSE s.n END
           MERGE (t:{VERSION_SEQ} {{key: p.new}})
           SET t.n = CASE WHEN coalesce(t.n, 0) < s.n THEN s.n ELSE t.n END
           SET d.key = p.new""",
        {"pairs": pairs},
    )
    conn.write_sync("UNWIND $pairs AS p MATCH (c:Chunk {document: p.old}) SET c.document = p.new", {"pairs": pairs})
    conn.write_sync("UNWIND $pairs AS p MATCH (s:SourceLog {key: p.old}) SET s.key = p.new", {"pairs": pairs})
    conn.write_sync(
        f"UNWIND $pairs AS p MATCH (s:{TRACE_SUPPORT} {{document: p.old}}) SET s.document = p.new", {"pairs": pairs}
    )
    done = {p["old"]: p["new"] for p in pairs}
    for table, column in ((TRACE_STEP, "supports"), (TRACE_DECISION, "review")):
        rows = conn.read_primary_sync(
            f"MATCH (x:{table}) WHERE x.{column} <> '[]' RETURN x.id AS id, x.{column} AS text"
        )
        changed = [{"id": r["id"], "text": t} for r in rows if (t := renamed_json(r["text"], done)) is not None]
        if changed:
            conn.write_sync(
                f"UNWIND $rows AS r MATCH (x:{table} {{id: r.id}}) SET x.{column} = r.text", {"rows": changed}
            )
    return sorted(done)
