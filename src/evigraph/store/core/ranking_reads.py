"""Reading graph ranking's inputs from a store, written once for both backends against a `Rows`
reader: every passage's sentences with their vectors and its mentions, and entities' name vectors.

A backend gives which passages count (FalkorDB keeps a switched-out version's passages until
`check`, flagged not live) and how its columns decode: the embedded engine returns Python floats
and packs spans as text, so it keeps its vectors as they come (a per-float conversion would cost
a full load seconds at 100,000 passages); FalkorDB's client returns numbers to convert.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from evigraph.models import embedding_text
from evigraph.store.caches import FactRows
from evigraph.store.core.reader import Rows
from evigraph.store.ranking import EntityVector, RankingRow, RankingText

BATCH = 2000
"""Entity ids a look-up statement names at once."""

Vector = Callable[[Sequence[Any]], tuple[float, ...]]


def read_ranking_rows(
    read: Rows,
    documents: Sequence[str] | None,
    *,
    live: str,
    spans: Callable[[Any], Iterable[int]],
    vector: Vector,
) -> list[RankingRow]:
    """Passages of `documents` (all when None) that satisfy `live` (a condition on `c`, or "")."""
    conditions = [c for c in (live, "c.document IN $keys" if documents is not None else "") if c]
    where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
    params: dict[str, Any] = {"keys": list(documents)} if documents is not None else {}
    chunks = read(
        f"""MATCH (c:Chunk) {where}RETURN c.id AS id, c.document AS doc, c.sentence_starts AS ss,
               c.sentence_ends AS se, c.sentence_vectors AS sv""",
        params,
    )
    mentions: dict[str, list[tuple[str, str, tuple[int, ...]]]] = {}
    for r in read(
        f"""MATCH (e:Entity)-[m:MENTIONED_IN]->(c:Chunk) {where}
            RETURN c.id AS c, e.id AS e, e.name AS n, m.span_starts AS s""",
        params,
    ):
        mentions.setdefault(r["c"], []).append((r["e"], r["n"], tuple(spans(r["s"]))))
    out = []
    for r in chunks:
        sentences = tuple((int(a), int(b)) for a, b in zip(r["ss"] or (), r["se"] or (), strict=False))
        vectors = r["sv"]
        out.append(
            RankingRow(
                chunk=r["id"],
                document=r["doc"],
                sentences=sentences,
                sentence_vectors=tuple(vector(v) for v in vectors)
                if vectors and len(vectors) == len(sentences)
                else None,
                mentions=tuple(mentions.get(r["id"], ())),
            )
        )
    return out


def read_entity_vectors(read: Rows, ids: Sequence[str] | None, vector: Vector) -> list[EntityVector]:
    """Name vectors of `ids` (every entity's when None); entities without one are left out."""
    if ids is None:
        rows = read(
            "MATCH (e:Entity) WHERE e.embedding IS NOT NULL RETURN e.id AS id, e.name AS n, e.embedding AS v", {}
        )
    else:
        rows = []
        for i in range(0, len(ids), BATCH):
            rows += read(
                """UNWIND $ids AS eid MATCH (e:Entity {id: eid}) WHERE e.embedding IS NOT NULL
                   RETURN e.id AS id, e.name AS n, e.embedding AS v""",
                {"ids": list(ids[i : i + BATCH])},
            )
    return [EntityVector(r["id"], r["n"], vector(r["v"])) for r in rows if r["v"]]


def read_ranking_texts(read: Rows, passages: str, limit: int, facts: bool = True) -> list[RankingText]:
    """At most `limit` texts still to embed: passages' sentences first (`passages`, the backend's
    query of `$k` passages with sentences and no sentence vectors, as id, title, t (text), ss and
    se (sentence starts and ends), cx (context)), then entity names, then relation facts (unless
    `facts` is False: a file whose relations have no vector column yet)."""
    out = []
    for r in read(passages, {"k": limit}):
        text = embedding_text(r["title"] or "", r["t"], r["cx"] or "")
        shift = len(text) - len(r["t"])
        spans = tuple((int(a) + shift, int(b) + shift) for a, b in zip(r["ss"], r["se"], strict=True))
        out.append(RankingText("sentences", r["id"], (text,), spans))
    if len(out) < limit:
        out += [
            RankingText("entity", r["id"], (r["n"],))
            for r in read(
                "MATCH (e:Entity) WHERE e.embedding IS NULL RETURN e.id AS id, e.name AS n LIMIT $k",
                {"k": limit - len(out)},
            )
        ]
    if facts and len(out) < limit:
        out += [
            RankingText("fact", r["id"], (r["f"],), ends=(r["s"], r["d"]))
            for r in read(
                """MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE r.embedding IS NULL AND r.fact IS NOT NULL
                   AND r.fact <> '' RETURN r.id AS id, a.id AS s, b.id AS d, r.fact AS f LIMIT $k""",
                {"k": limit - len(out)},
            )
        ]
    return out


def read_fact_vectors(read: Rows, chunks: Callable[[Any], Iterable[str]]) -> FactRows:
    """Every relation with a fact vector: its id, first source passage or "", source entity, and
    vector, as `FactRows` (a float32 matrix, allocated once from a count).

    The passage, else the source entity, is where the graph index lists the relation
    (`GraphIndex.relations_at`), so the saved fact index needs no copy of the relations. Read
    `BATCH` source entities at a time: one query of every fact held them all as Python floats at
    once (about 25 KB a fact at 384 dimensions)."""
    import numpy as np

    counted = read(
        "MATCH (a:Entity)-[r:RELATES]->(:Entity) WHERE r.embedding IS NOT NULL RETURN a.id AS s, count(r) AS n", {}
    )
    sources = sorted(r["s"] for r in counted)
    capacity = sum(int(r["n"]) for r in counted)
    ids: list[str] = []
    firsts: list[str] = []
    froms: list[str] = []
    matrix: Any = None
    for start in range(0, len(sources), BATCH):
        for r in read(
            """UNWIND $ids AS sid MATCH (a:Entity {id: sid})-[r:RELATES]->(:Entity) WHERE r.embedding IS NOT NULL
               RETURN r.id AS id, a.id AS s, r.source_chunks AS c, r.embedding AS v""",
            {"ids": sources[start : start + BATCH]},
        ):
            if not r["v"]:
                continue
            if matrix is None:
                matrix = np.empty((max(capacity, 1), len(r["v"])), dtype=np.float32)
            elif len(ids) == len(matrix):  # facts written since the count (another process's)
                matrix = np.concatenate([matrix, np.empty_like(matrix)])
            matrix[len(ids)] = np.asarray(r["v"], dtype=np.float32)
            ids.append(r["id"])
            firsts.append(next(iter(chunks(r["c"])), ""))
            froms.append(r["s"])
    return ids, firsts, froms, None if matrix is None else matrix[: len(ids)]
