"""Reads on FalkorDB: documents, passages, entities, full-text and vector search.

Every passage read keeps to `live` passages (see `documents.py`), so a version being written or
abandoned by a crashed writer is never returned.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from evigraph.models import ChunkHit, EntityHit, StoreCounts, StoredDocument
from evigraph.store.base import VectorSearch, searchable_text
from evigraph.store.embedded.reads import stored_document
from evigraph.store.embedded.schema import fts_text
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.schema import QUERY_STOPWORDS

DOC_FIELDS = """d.key AS key, d.title AS title, d.path AS path, d.content_hash AS content_hash,
                d.version AS version, d.loader AS loader, d.chunk_count AS chunks"""
CHUNK_FIELDS = """c.id AS id, c.document AS document, c.version AS version, c.index AS index, c.text AS text,
                  c.page AS page, c.char_start AS cs, c.char_end AS ce, c.breadcrumbs AS breadcrumbs,
                  c.passage_context AS context, d.title AS title, d.path AS path"""
VECTOR_OVERFETCH = 4
"""Nearest neighbours asked of the index per passage wanted: some may be passages of a version
not switched in yet, which are dropped."""


def get_documents(conn: Connection, keys: Sequence[str]) -> dict[str, StoredDocument]:
    rows = conn.read_sync(
        f"UNWIND $keys AS k MATCH (d:Document {{key: k}}) WHERE d.version IS NOT NULL RETURN {DOC_FIELDS}",
        {"keys": list(keys)},
    )
    return {r["key"]: stored_document(r) for r in rows}


def list_documents(conn: Connection, limit: int, offset: int) -> list[StoredDocument]:
    rows = conn.read_sync(
        f"MATCH (d:Document) WHERE d.version IS NOT NULL RETURN {DOC_FIELDS} ORDER BY d.key SKIP $offset LIMIT $limit",
        {"offset": offset, "limit": limit},
    )
    return [stored_document(r) for r in rows]


def counts(conn: Connection) -> StoreCounts:
    labels = {
        r["label"]: int(r["n"]) for r in conn.read_sync("MATCH (e:Entity) RETURN e.label AS label, count(*) AS n")
    }
    types = {
        r["type"]: int(r["n"]) for r in conn.read_sync("MATCH ()-[r:RELATES]->() RETURN r.type AS type, count(*) AS n")
    }
    one = conn.read_sync(
        """MATCH (d:Document) WHERE d.version IS NOT NULL WITH count(d) AS docs
           OPTIONAL MATCH (c:Chunk) WHERE c.live WITH docs, count(c) AS chunks
           OPTIONAL MATCH (:Entity)-[m:MENTIONED_IN]->(c:Chunk) WHERE c.live
           RETURN docs, chunks, count(m) AS mentions"""
    )[0]
    return StoreCounts(
        documents=int(one["docs"]),
        chunks=int(one["chunks"]),
        entities=sum(labels.values()),
        relations=sum(types.values()),
        mentions=int(one["mentions"]),
        labels=dict(sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))),
        relation_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def chunk_hit(r: dict[str, Any], score: float = 0.0) -> ChunkHit:
    return ChunkHit(
        id=r["id"],
        document=r["document"],
        version=int(r["version"] or 0),
        title=r["title"] or "",
        path=r["path"],
        index=int(r["index"]),
        text=r["text"],
        score=score,
        page=r["page"],
        start=int(r["cs"] or 0),
        end=int(r["ce"] or 0),
        breadcrumbs=list(r["breadcrumbs"] or []),
        context=r.get("context") or "",
    )


BM25_K1 = 1.2
BM25_B = 0.75
"""Okapi BM25's parameters as the embedded store's full-text index (Kuzu's) uses them."""


def search_chunks(
    conn: Connection,
    query: str,
    limit: int,
    lengths: Callable[[], tuple[int, float]],
    terms: PassageTerms | None = None,
) -> list[ChunkHit]:
    """The passages best matching `query` by BM25 over Porter stems, as the embedded store ranks them.

    The server's full-text index finds which passages hold each query word, but its own score
    is no ranking to keep: in FalkorDB's build it sums raw term frequencies without any inverse
    document frequency or length normalisation, so "film" or "born" outweighs a rare name (12 %
    recall@5 on 2WikiMultihopQA where the embedded store's BM25 gives 69 %). So the index
    answers which passages hold which word (and how many: the document frequencies), and the
    passages are scored here with Kuzu's BM25 and Porter stemmer, best bound first (`_bm25_top`).

    Each word's passages come back as one string of ids (`string.join`; a passage id holds no
    space, see `chunk_id`): thousands of ids as separate values cost the client more to parse
    than the server to find them (32 ms against 10 a question at 10k passages). `terms` remembers
    what a passage holds across calls (see `PassageTerms`).
    """
    words = [t for t in dict.fromkeys(fts_text(query).split()) if len(t) > 1 and t not in QUERY_STOPWORDS]
    if not words:
        return []
    rows = conn.read_sync(
        """UNWIND $words AS w CALL db.idx.fulltext.queryNodes('Chunk', w) YIELD node
           WITH w, node WHERE node.live RETURN w, string.join(collect(node.id), ' ') AS ids""",
        {"words": words},
    )
    stems = porter_stems(words)
    postings: dict[str, set[str]] = {}
    for r in rows:
        if r["ids"]:
            postings.setdefault(stems[r["w"]], set()).update(r["ids"].split(" "))
    if not postings:
        return []
    passages, mean_length = lengths()
    idf = {s: math.log((passages - len(ids) + 0.5) / (len(ids) + 0.5) + 1) for s, ids in postings.items()}
    return _bm25_top(conn, postings, idf, mean_length, limit, terms if terms is not None else PassageTerms())


PASSAGE_TERMS_KEPT = 20_000
"""Passages whose stem counts a store remembers (least recently used dropped first)."""


class PassageTerms:
    """Per passage id, its length in words and its Porter stems' counts, as BM25 reads them.

    A passage id names one version of one passage (`chunk_id`: key, version number, index), whose
    text never changes, so what is remembered here needs no generation check: a passage no longer
    live is simply never asked for again (postings keep to live passages). Bounded, least
    recently used first out; thread-safe."""

    def __init__(self, kept: int = PASSAGE_TERMS_KEPT) -> None:
        self._kept = kept
        self._held: OrderedDict[str, tuple[int, dict[str, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ids: Sequence[str]) -> dict[str, tuple[int, dict[str, int]]]:
        with self._lock:
            found = {i: held for i in ids if (held := self._held.get(i)) is not None}
            for i in found:
                self._held.move_to_end(i)
        return found

    def put(self, entries: dict[str, tuple[int, dict[str, int]]]) -> None:
        with self._lock:
            self._held.update(entries)
            for i in entries:
                self._held.move_to_end(i)
            while len(self._held) > self._kept:
                self._held.popitem(last=False)

    def __len__(self) -> int:
        return len(self._held)


def passage_stems(texts: Sequence[tuple[str, str]]) -> dict[str, tuple[int, dict[str, int]]]:
    """Each passage's length in words and its stems' counts, from its full-text column."""
    counted = [(cid, text.split()) for cid, text in texts]
    tokens = [Counter(words) for _, words in counted]
    stems = porter_stems([t for c in tokens for t in c])  # one stemmer call for all
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for (cid, words), c in zip(counted, tokens, strict=True):
        held: dict[str, int] = {}
        for token, n in c.items():
            s = stems[token]
            held[s] = held.get(s, 0) + n
        out[cid] = (len(words), held)
    return out


def _bm25_top(
    conn: Connection,
    postings: dict[str, set[str]],
    idf: dict[str, float],
    mean_length: float,
    limit: int,
    terms: PassageTerms,
) -> list[ChunkHit]:
    """The `limit` best passages by BM25, reading as few as it can: a passage's score is at most
    the sum of (k1 + 1) x idf over the stems it holds, so passages are scored in the order of that
    bound, `max(limit, 50)` at a time, and scoring stops once the bound of the next is below the
    `limit`-th score found. Only the words are read while scoring, and only of the passages
    `terms` does not remember; the passages kept are read whole at the end.

    The bound is loose and not strict: the server's index matches words by its own stemmer, so a
    passage may hold a query stem (Porter's) its postings do not list. So which passages get
    scored must not depend on what `terms` happens to remember, or the answer would depend on
    the questions asked before: the rounds are the same with or without it."""
    held_by: dict[str, int] = {}  # passage -> bit set of the stems it holds
    order_stems = list(postings)
    for bit, stem in enumerate(order_stems):
        for i in postings[stem]:
            held_by[i] = held_by.get(i, 0) | (1 << bit)
    bound_of: dict[int, float] = {}
    for mask in set(held_by.values()):
        bound_of[mask] = sum((BM25_K1 + 1) * idf[s] for bit, s in enumerate(order_stems) if mask >> bit & 1)
    groups: dict[float, list[str]] = {}  # bound -> its passages; most hold one common word only
    for i, mask in held_by.items():
        groups.setdefault(bound_of[mask], []).append(i)
    bounds = sorted(groups, reverse=True)
    order: list[str] = []  # by bound, best first, then by id: sorted a group at a time, as reached
    batch = max(limit, 50)
    scored: list[tuple[float, str]] = []
    at = 0
    while at < len(held_by):
        while len(order) <= at + batch and len(order) < len(held_by):
            order += sorted(groups[bounds.pop(0)])
        window = order[at : at + batch]
        at += len(window)
        known = terms.get(window)
        missing = [cid for cid in window if cid not in known]
        if missing:
            rows = conn.read_sync(
                "UNWIND $ids AS i MATCH (c:Chunk {id: i}) WHERE c.live RETURN c.id AS id, c.search_text AS st",
                {"ids": missing},
            )
            read = passage_stems([(r["id"], r["st"] or "") for r in rows])
            terms.put(read)
            known.update(read)
        for cid in window:
            if cid not in known:
                continue  # no longer live
            length, counts = known[cid]
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / mean_length) if mean_length else BM25_K1
            score = sum(w * counts[s] * (BM25_K1 + 1) / (counts[s] + norm) for s, w in idf.items() if s in counts)
            if score > 0:
                scored.append((score, cid))
        scored.sort(key=lambda sc: (-sc[0], sc[1]))
        del scored[limit:]
        if len(scored) == limit and at < len(order) and scored[-1][0] >= bound_of[held_by[order[at]]]:
            break
    hits = {h.id: h for h in chunks_by_ids(conn, [cid for _, cid in scored])}
    return [hits[cid].model_copy(update={"score": score}) for score, cid in scored if cid in hits]


_STEMS: dict[str, str] = {}
_STEMMER: list[Any] = []  # the in-memory Kuzu connection that stems, made on first use
_STEM_LOCK = threading.Lock()


def porter_stems(words: Sequence[str]) -> dict[str, str]:
    """Each word's Porter stem, by the embedded engine's own stemmer (Kuzu's `stem`), so a word
    counts for the stems it counts for in the embedded store; remembered per process."""
    missing = [w for w in dict.fromkeys(words) if w not in _STEMS]
    if missing:
        with _STEM_LOCK:
            if not _STEMMER:
                import kuzu

                db = kuzu.Database(":memory:")
                stemmer = kuzu.Connection(db)
                stemmer.execute("LOAD EXTENSION fts")
                _STEMMER.extend([db, stemmer])
            result = _STEMMER[1].execute("UNWIND $w AS w RETURN w, stem(w, 'porter')", {"w": missing})
            while result.has_next():
                word, stem = result.get_next()
                _STEMS[word] = stem
    return {w: _STEMS.get(w, w) for w in words}


def corpus_lengths(conn: Connection) -> tuple[int, float]:
    """How many live passages there are and their mean length in words: BM25's N and average
    length; the store keeps them per generation of the graph (`caches.Generation`)."""
    row = conn.read_sync(
        "MATCH (c:Chunk) WHERE c.live RETURN count(c) AS n, avg(size(split(c.search_text, ' '))) AS mean"
    )[0]
    return int(row["n"] or 0), float(row["mean"] or 0.0)


def chunks_by_ids(conn: Connection, ids: Sequence[str]) -> list[ChunkHit]:
    rows = conn.read_sync(
        f"""UNWIND $ids AS i MATCH (c:Chunk {{id: i}}) WHERE c.live
            MATCH (c)-[:PART_OF]->(d:Document) RETURN {CHUNK_FIELDS}""",
        {"ids": list(dict.fromkeys(ids))},
    )
    found = {r["id"]: chunk_hit(r) for r in rows}
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def document_chunks(conn: Connection, key: str, limit: int) -> list[ChunkHit]:
    rows = conn.read_sync(
        f"""MATCH (c:Chunk {{document: $key}}) WHERE c.live MATCH (c)-[:PART_OF]->(d:Document)
            RETURN {CHUNK_FIELDS} ORDER BY c.index LIMIT $limit""",
        {"key": key, "limit": limit},
    )
    return [chunk_hit(r) for r in rows]


def search_entities(conn: Connection, query: str, limit: int) -> list[EntityHit]:
    terms = fts_text(query).split()
    if not terms:
        return []
    rows = conn.read_sync(  # sorted before the fields are read: thousands of entities match a question
        """CALL db.idx.fulltext.queryNodes('Entity', $q) YIELD node, score WITH node, score ORDER BY score DESC LIMIT $k
           RETURN node.id AS id, node.name AS name, node.label AS label, node.description AS description, score""",
        {"q": "|".join(dict.fromkeys(terms)), "k": limit},
    )
    return [entity_hit(r, float(r["score"])) for r in rows]


def entity_hit(r: dict[str, Any], score: float = 0.0) -> EntityHit:
    return EntityHit(id=r["id"], name=r["name"], label=r["label"], description=r["description"] or "", score=score)


def entities_by_ids(conn: Connection, ids: Sequence[str]) -> list[EntityHit]:
    rows = conn.read_sync(
        """UNWIND $ids AS i MATCH (e:Entity {id: i})
           RETURN e.id AS id, e.name AS name, e.label AS label, e.description AS description""",
        {"ids": list(dict.fromkeys(ids))},
    )
    found = {r["id"]: entity_hit(r) for r in rows}
    return [found[i] for i in ids if i in found]


def vector_search(conn: Connection, vector: Sequence[float], limit: int) -> list[tuple[str, float]]:
    """Nearest live passages by the server's HNSW index; scores are cosine similarities."""
    rows = conn.read_sync(
        """CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node, score
           WITH node AS c, score WHERE c.live RETURN c.id AS id, score ORDER BY score LIMIT $limit""",
        {"k": max(limit * VECTOR_OVERFETCH, limit), "v": [float(x) for x in vector], "limit": limit},
    )
    return [(r["id"], 1.0 - float(r["score"])) for r in rows]


def vector_stats(
    conn: Connection, vector: Sequence[float], limit: int, passages: int, mean: float, std: float
) -> VectorSearch:
    return VectorSearch(vector_search(conn, vector, limit), passages, mean, std)


def term_texts(conn: Connection) -> list[str]:
    rows = conn.read_sync(
        """MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE c.live
           RETURN d.title AS title, c.breadcrumbs AS breadcrumbs, c.text AS text, c.passage_context AS cx"""
    )
    return [searchable_text(r["title"] or "", r["breadcrumbs"] or (), r["text"] or "", r["cx"] or "") for r in rows]


def name_rows(conn: Connection) -> list[tuple[str, str, list[str]]]:
    rows = conn.read_sync("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.aliases AS aliases")
    return [(r["id"], r["name"], list(r["aliases"] or [])) for r in rows]


def vector_rows(conn: Connection) -> list[tuple[str, list[float]]]:
    rows = conn.read_sync(
        "MATCH (c:Chunk) WHERE c.live AND c.embedding IS NOT NULL RETURN c.id AS id, c.embedding AS v"
    )
    return [(r["id"], list(r["v"])) for r in rows if r["v"]]


def get_meta(conn: Connection, key: str) -> str | None:
    rows = conn.read_sync("MATCH (m:EvigraphMeta {key: $k}) RETURN m.value AS v", {"k": key})
    return rows[0]["v"] if rows else None
