"""`version_rows`: document versions as the parameter rows every store writes them from.

A batch of versions becomes rows of passages, passage chains, entities (descriptions and aliases
folded across the batch), mentions and relations (sources gathered across the batch). Both
stores write from these rows, each with its own statements, so what a document version is made
of in the graph cannot differ between them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, GraphData, StoredDocument
from evigraph.store.core.reader import Rows
from evigraph.store.search_text import fts_text
from evigraph.store.terms import searchable_text


def chunk_id(key: str, version: int, index: int) -> str:
    """Chunk identity: which document, which version, which passage; stable for citations."""
    import hashlib

    return f"{hashlib.sha1(key.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}:{version}:{index}"


class Folded(dict[str, dict[str, Any]]):
    """Rows by id whose list fields gather distinct values in first-seen order.

    Each value is checked against a set kept beside the row, not against the list: a popular
    entity or relation is met in hundreds of passages of one write group, and rebuilding its list
    at each meeting made a group's rows cost the square of its size.
    """

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[tuple[str, str], set[Any]] = {}

    def gather(self, rid: str, name: str, values: Sequence[Any]) -> None:
        """Append to row `rid`'s list `name` the values it does not hold yet."""
        if not values:  # most meetings bring nothing new to gather (an entity without description)
            return
        have = self[rid][name]
        seen = self._seen.get((rid, name))
        if seen is None:
            seen = self._seen[(rid, name)] = set(have)
        for value in values:
            if value not in seen:
                seen.add(value)
                have.append(value)


@dataclass
class VersionRows:
    docs: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    nexts: list[dict[str, str]] = field(default_factory=list)
    entities: Folded = field(default_factory=Folded)
    mentions: list[dict[str, Any]] = field(default_factory=list)
    relations: Folded = field(default_factory=Folded)


def document_row(v: DocumentVersion, number: int, at: datetime | str) -> dict[str, Any]:
    """The document node's row; `at` as the store keeps time (a datetime, or ISO text on FalkorDB)."""
    return {
        "key": v.key,
        "title": v.title,
        "path": v.path,
        "hash": v.content_hash,
        "version": number,
        "loader": v.loader,
        "metadata": json.dumps(v.metadata, ensure_ascii=False, sort_keys=True),
        "chunks": len(v.chunks),
        "at": at,
    }


def version_rows(versions: Sequence[DocumentVersion], numbers: Mapping[str, int], at: datetime) -> VersionRows:
    """The rows of `versions`, each at the version number `numbers` gives its key."""
    out = VersionRows()
    for v in versions:
        number = numbers[v.key]
        out.docs.append(document_row(v, number, at))
        ids = [chunk_id(v.key, number, c.index) for c in v.chunks]
        by_index = {c.index: cid for c, cid in zip(v.chunks, ids, strict=True)}
        vectors = v.embeddings or [None] * len(v.chunks)
        bridges = v.sentences or ((),) * len(v.chunks)
        bridge_vectors = v.sentence_embeddings or (None,) * len(v.chunks)
        found = v.found or (None,) * len(v.chunks)
        for c, cid, vec, spans, svecs, fd in zip(v.chunks, ids, vectors, bridges, bridge_vectors, found, strict=True):
            out.chunks.append(
                {
                    "id": cid,
                    "doc": v.key,
                    "version": number,
                    "index": c.index,
                    "text": c.text,
                    "bc": list(c.breadcrumbs),
                    "page": c.page,
                    "cs": c.start,
                    "ce": c.end,
                    "emb": list(vec) if vec is not None else None,
                    "st": fts_text(searchable_text(v.title, c.breadcrumbs, c.text, c.context)),
                    "cx": c.context or None,
                    "ss": [sp.start for sp in spans],
                    "se": [sp.end for sp in spans],
                    "sv": [list(x) for x in svecs] if svecs is not None and spans else None,
                    "fd": fd,
                }
            )
        out.nexts.extend({"a": a, "b": b} for a, b in itertools.pairwise(ids))
        add_graph(out, v.graph, by_index)
    names: dict[str, tuple[float, ...]] = {}
    for v in versions:
        names.update(v.name_embeddings or {})
    for row in out.entities.values():
        vec = names.get(row["name"])
        row["v"] = list(vec) if vec is not None else None  # set on an entity the write creates
    return out


def add_graph(out: VersionRows, graph: GraphData, by_index: Mapping[int, str]) -> None:
    """Add a document's entities, mentions and relations to the rows; `by_index` gives the id of
    each of its passages by index (what names no passage of it is left out)."""
    for e in graph.entities:
        add_entity(out.entities, e)
    for m in graph.mentions:
        if m.chunk_index in by_index:
            out.mentions.append(
                {
                    "e": m.entity_id,
                    "c": by_index[m.chunk_index],
                    "s": [s.start for s in m.spans],
                    "t": [s.end for s in m.spans],
                }
            )
    for r in graph.relations:
        sources = [by_index[i] for i in r.chunk_indexes if i in by_index]
        if sources:
            add_relation(out.relations, r, sources)


def add_entity(entities: Folded, e: ExtractedEntity) -> None:
    """Add entity `e` to the rows: an entity given twice keeps one row, with the descriptions and
    aliases of both."""
    if e.id not in entities:  # a first meeting: its own lists, without duplicates
        entities[e.id] = {
            "id": e.id,
            "name": e.name,
            "label": e.label,
            "descs": list(dict.fromkeys(e.descriptions)),
            "aliases": list(dict.fromkeys(e.aliases)),
        }
    else:
        entities.gather(e.id, "descs", e.descriptions)
        entities.gather(e.id, "aliases", e.aliases)


def add_relation(relations: Folded, r: ExtractedRelation, sources: Sequence[str]) -> None:
    """Add relation `r`, stated by passages `sources`, to the rows: a relation given twice keeps
    one row, with both sets of sources and the higher confidence."""
    rid = r.id  # a hash of the fact: computed once
    row = relations.get(rid)
    if row is None:
        relations[rid] = {
            "id": rid,
            "s": r.source,
            "d": r.target,
            "type": r.type,
            "fact": r.fact,
            "conf": float(r.confidence),
            "src": list(dict.fromkeys(sources)),
        }
    else:
        row["conf"] = max(row["conf"], float(r.confidence))
        relations.gather(rid, "src", sources)


DOC_FIELDS = """d.key AS key, d.title AS title, d.path AS path, d.content_hash AS content_hash,
                d.version AS version, d.loader AS loader, d.chunk_count AS chunks"""
"""What a stored document is read with, on both stores (`stored_document`)."""


def document_page(read: Rows, whole: str, limit: int, offset: int) -> list[StoredDocument]:
    """Documents by key, `limit` from `offset`; `whole` is the backend's condition on `d` that a
    document is switched in (empty where every document is)."""
    rows = read(
        f"MATCH (d:Document) {whole} RETURN {DOC_FIELDS} ORDER BY d.key SKIP $offset LIMIT $limit",
        {"offset": offset, "limit": limit},
    )
    return [stored_document(r) for r in rows]


def stored_document(row: dict[str, Any]) -> StoredDocument:
    """A document row (`DOC_FIELDS`' names) as the contract returns it; both stores read these names."""
    return StoredDocument(
        key=row["key"],
        title=row["title"] or "",
        path=row["path"],
        content_hash=row["content_hash"] or "",
        version=int(row["version"] or 0),
        loader=row["loader"] or "",
        chunks=int(row["chunks"] or 0),
    )
