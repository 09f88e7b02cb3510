"""Typing again at finalize on the embedded store: documents' found names read back, and their
graphs replaced in one transaction (`GraphRewriteStore`). The deletes follow `writes`' rules
(each relationship by its own statement, no `NOT EXISTS`), for the reasons measured there."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from evigraph.store.core.graph_rows import FOUND_PASSAGES, found_page, rewrite_plan
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.packed import unpack_ints
from evigraph.store.embedded.writes import (
    EDGE_BATCH,
    create_mentions,
    delete_orphans,
    prune_relation_sources,
    write_entities,
    write_relations,
)
from evigraph.store.graph_rewrite import DocumentGraph, FoundPage


def found_documents(tx: Tx, after: str | None, limit: int) -> FoundPage:
    keys = tx.column(
        "MATCH (d:Document) WHERE d.key > $after RETURN d.key ORDER BY d.key LIMIT $limit",
        {"after": after or "", "limit": limit},
    )
    if not keys:
        return FoundPage([], None)
    rows = tx.rows(
        f"UNWIND $keys AS k MATCH (c:Chunk)-[:PART_OF]->(d:Document {{key: k}}) {FOUND_PASSAGES}", {"keys": keys}
    )
    return found_page(keys, limit, rows)


def replace_graphs(tx: Tx, graphs: Sequence[DocumentGraph]) -> list[str]:
    changed = rewrite_plan(tx.rows, graphs, lambda packed: tuple(unpack_ints(packed)))
    if not changed.keys:
        return []
    gone, candidates = set(changed.chunks), changed.held
    tx.run_batched("UNWIND $rows AS cid MATCH (:Entity)-[m:MENTIONED_IN]->(:Chunk {id: cid}) DELETE m", changed.chunks)
    if candidates:
        prune_relation_sources(tx, candidates, gone, extracted_only=True)
    rows = changed.rows
    created = write_entities(tx, rows.entities, datetime.now(UTC).replace(tzinfo=None))
    create_mentions(tx, rows.mentions)
    write_relations(tx, rows.relations, new_entities=created)
    before = {
        r["id"]: (list(r["ss"] or []), list(r["se"] or []))
        for r in tx.rows(
            """UNWIND $ids AS cid MATCH (c:Chunk {id: cid})
               RETURN c.id AS id, c.sentence_starts AS ss, c.sentence_ends AS se""",
            {"ids": changed.chunks},
        )
    }
    tx.run_batched(  # only sentences that changed lose their vectors
        """UNWIND $rows AS r WITH r.id AS cid, r.ss AS ss, r.se AS se MATCH (c:Chunk {id: cid})
           SET c.sentence_starts = CAST(ss AS INT64[]), c.sentence_ends = CAST(se AS INT64[]),
               c.sentence_vectors = NULL""",
        [r for r in changed.sentences if before.get(r["id"]) != (r["ss"], r["se"])],
        EDGE_BATCH,
    )
    delete_orphans(tx, candidates)
    return changed.keys
