"""Graph ranking's inputs on FalkorDB (see store/ranking.py), and a change feed that knows about
other processes.

Storage: a passage's bridge-sentence vectors are a nested list property (`sentence_vectors`, as
`documents.py` writes them); an entity's name vector, and a relation's fact vector, is a `vecf32`
(`embedding`), four bytes a dimension like the embedded store's FLOAT[], and read back as a tuple
of floats. Only live
passages (their version switched in, see `documents.py`) are read or handed out.

The change feed (`ranking_changes`): the in-process `ChangeJournal` records what this process
wrote, but other processes write the same graph. Every write through any process increments the
graph's generation counter (`caches.Generation`), and `INCR` hands each write its own value, so
this process records the values its own increments returned. A token is

    <journal token>/<generation>

(e.g. `3f2a9c1e0b7d:41/118`). Given one back, the feed reads the generation now: if any value
between the token's and now was not handed to this process, another process wrote, and the
answer is `full` (graph ranking reloads); otherwise the journal's answer holds. A token of
another store, another open (its journal id differs) or a counter that went backwards (the
server lost it) answers `full`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.store.core.ranking_reads import read_entity_vectors, read_ranking_rows, read_ranking_texts
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.section import FalkorSection
from evigraph.store.ranking import EntityVector, RankingRow, RankingText, StoreChanges


def parse_token(token: str | None) -> tuple[str, int] | None:
    journal, sep, generation = (token or "").rpartition("/")
    if not sep or not generation.isdigit():
        return None
    return journal, int(generation)


class FalkorRankingOps(FalkorSection):
    """The GraphStore ranking section for `FalkorStore`."""

    async def pending_ranking_texts(self, limit: int = 256, *, facts: bool = True) -> list[RankingText]:
        return await self._read(lambda: pending_ranking_texts(self.conn, limit, facts))

    async def write_ranking_vectors(self, rows: Sequence[tuple[RankingText, Sequence[Sequence[float]]]]) -> None:
        if not rows:
            return
        check_counts(rows)
        documents: list[str] = await self._write(lambda: write_ranking_vectors(self.conn, rows))
        self._journal.documents(documents)
        self._journal.entities(t.id for t, _ in rows if t.kind == "entity")

    async def ranking_rows(self, documents: Sequence[str] | None = None) -> list[RankingRow]:
        if documents is not None and not documents:
            return []
        return await self._read(
            lambda: read_ranking_rows(self.conn.read_sync, documents, live="c.live", spans=_ints, vector=_floats)
        )

    async def entity_vectors(self, ids: Sequence[str] | None = None) -> list[EntityVector]:
        if ids is not None and not ids:
            return []
        return await self._read(lambda: read_entity_vectors(self.conn.read_sync, ids, _floats))

    async def ranking_changes(self, since: str | None) -> StoreChanges:
        now = await self._read(self.cache.current)
        answer = self._journal.since(None)
        parsed = parse_token(since)
        if parsed is not None and not self.cache.foreign(parsed[1], now):
            answer = self._journal.since(parsed[0])
        return StoreChanges(
            f"{answer.token}/{now}",
            full=answer.full,
            documents=answer.documents,
            entities=answer.entities,
        )

    def clear_ranking_vectors(self) -> None:
        """Drop sentence, name and fact vectors with the passage vectors, when the embedding model
        changes (run inside the store's write, which moves the generation on)."""
        self.conn.write_sync("MATCH (c:Chunk) WHERE c.sentence_vectors IS NOT NULL SET c.sentence_vectors = NULL")
        self.conn.write_sync("MATCH (e:Entity) WHERE e.embedding IS NOT NULL SET e.embedding = NULL")
        self.conn.write_sync("MATCH ()-[r:RELATES]->() WHERE r.embedding IS NOT NULL SET r.embedding = NULL")


# -- the queries -------------------------------------------------------------------------------


def pending_ranking_texts(conn: Connection, limit: int, facts: bool = True) -> list[RankingText]:
    return read_ranking_texts(
        conn.read_sync,
        """MATCH (c:Chunk) WHERE c.live AND size(coalesce(c.sentence_starts, [])) > 0 AND c.sentence_vectors IS NULL
           MATCH (c)-[:PART_OF]->(d:Document)
           RETURN c.id AS id, d.title AS title, c.text AS t, c.sentence_starts AS ss, c.sentence_ends AS se,
                  c.passage_context AS cx
           LIMIT $k""",
        limit,
        facts,
    )


def check_counts(rows: Sequence[tuple[RankingText, Sequence[Sequence[float]]]]) -> None:
    """A wrong number of vectors is refused, not skipped: a skipped row would stay pending and be
    handed out again by every later `pending_ranking_texts`."""
    for t, vecs in rows:
        wanted = len(t.spans) if t.kind == "sentences" else 1
        if len(vecs) != wanted:
            raise ValueError(f"{t.kind} {t.id}: {len(vecs)} vectors for {wanted} texts")


def write_ranking_vectors(conn: Connection, rows: Sequence[tuple[RankingText, Sequence[Sequence[float]]]]) -> list[str]:
    """Store the vectors; returns the documents whose passages got sentence vectors.

    Each batch is one query; a batch stopped midway leaves the rest pending, handed out again.
    """
    check_counts(rows)
    sentences = [
        {"id": t.id, "v": [[float(x) for x in vec] for vec in vecs]} for t, vecs in rows if t.kind == "sentences"
    ]
    names = [{"id": t.id, "v": [float(x) for x in vecs[0]]} for t, vecs in rows if t.kind == "entity"]
    documents: list[str] = []
    for i in range(0, len(sentences), 500):
        documents += [
            r["d"]
            for r in conn.write_sync(
                "UNWIND $rows AS r MATCH (c:Chunk {id: r.id}) SET c.sentence_vectors = r.v RETURN c.document AS d",
                {"rows": sentences[i : i + 500]},
            )
        ]
    conn.write_many(
        "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) SET e.embedding = vecf32(r.v)",
        names,
        batch=500,
    )
    facts = [{"id": t.id, "v": [float(x) for x in vecs[0]]} for t, vecs in rows if t.kind == "fact"]
    conn.write_many(
        "UNWIND $rows AS r MATCH ()-[x:RELATES {id: r.id}]->() SET x.embedding = vecf32(r.v)",
        facts,
        batch=500,
    )
    return list(dict.fromkeys(documents))


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in values or ())


def _floats(values: Sequence[Any]) -> tuple[float, ...]:
    return tuple(float(x) for x in values)
