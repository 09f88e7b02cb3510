"""The embedded schema's side of graph ranking's inputs: the texts still to embed and the
vectors written back (the reads both backends share are in `store/core/ranking_reads.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.store.core.ranking_reads import read_ranking_texts
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.reads import context_of
from evigraph.store.ranking import RankingText


def pending_ranking_texts(tx: Tx, limit: int, context: bool = True, facts: bool = True) -> list[RankingText]:
    return read_ranking_texts(
        tx.rows,
        f"""MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE size(c.sentence_starts) > 0 AND c.sentence_vectors IS NULL
            RETURN c.id AS id, d.title AS title, c.text AS t, c.sentence_starts AS ss, c.sentence_ends AS se,
                   {context_of("c", context)} AS cx
            LIMIT $k""",
        limit,
        facts,
    )


def write_ranking_vectors(tx: Tx, rows: Sequence[tuple[RankingText, Sequence[Sequence[float]]]]) -> list[str]:
    """Store the vectors; returns the documents whose passages got sentence vectors.

    A wrong number of vectors is refused, not skipped: a skipped row would stay pending and be
    handed out again by every later `pending_ranking_texts`.
    """
    for t, vecs in rows:
        wanted = len(t.spans) if t.kind == "sentences" else 1
        if len(vecs) != wanted:
            raise ValueError(f"{t.kind} {t.id}: {len(vecs)} vectors for {wanted} texts")
    sentences = [
        {"id": t.id, "v": [[float(x) for x in vec] for vec in vecs]} for t, vecs in rows if t.kind == "sentences"
    ]
    names = [{"id": t.id, "v": [float(x) for x in vecs[0]]} for t, vecs in rows if t.kind == "entity"]
    facts = [
        {"id": t.id, "s": t.ends[0], "d": t.ends[1], "v": [float(x) for x in vecs[0]]}
        for t, vecs in rows
        if t.kind == "fact" and t.ends is not None
    ]
    tx.run_batched(
        """UNWIND $rows AS r WITH r.id AS rid, r.s AS s, r.d AS d, r.v AS v
           MATCH (:Entity {id: s})-[x:RELATES]->(:Entity {id: d}) WHERE x.id = rid
           SET x.embedding = CAST(v AS FLOAT[])""",
        facts,
    )
    tx.run_batched(
        "UNWIND $rows AS r WITH r.id AS cid, r.v AS v MATCH (c:Chunk {id: cid}) SET c.sentence_vectors = "
        "CAST(v AS FLOAT[][])",
        sentences,
    )
    tx.run_batched(
        "UNWIND $rows AS r WITH r.id AS eid, r.v AS v MATCH (e:Entity {id: eid}) SET e.embedding = CAST(v AS FLOAT[])",
        names,
    )
    if not sentences:
        return []
    return list(
        dict.fromkeys(
            r["d"]
            for r in tx.rows(
                "UNWIND $ids AS cid MATCH (c:Chunk {id: cid}) RETURN c.document AS d",
                {"ids": [s["id"] for s in sentences]},
            )
        )
    )


def clear_ranking_vectors(tx: Tx, facts: bool = True) -> None:
    """Drop sentence, name and fact vectors with the passage vectors, when the embedding model changes."""
    tx.execute("MATCH (c:Chunk) WHERE c.sentence_vectors IS NOT NULL SET c.sentence_vectors = NULL").close()
    tx.execute("MATCH (e:Entity) WHERE e.embedding IS NOT NULL SET e.embedding = NULL").close()
    if facts:
        tx.execute("MATCH ()-[r:RELATES]->() WHERE r.embedding IS NOT NULL SET r.embedding = NULL").close()
