"""`graph_rows`: the graphs finalize gives documents again (`GraphRewriteStore.replace_graphs`)
as the rows both stores write them from, and which of them change anything.

A document's graph changed when its mentions did: relations are read off the mentions and the
passage's sentences (`cooccurrence`), entities off the names at the mentions' spans, so equal
mentions give an equal graph. The mentions compared are the stored ones against the new ones
after the merges finalize recorded (`redirect_graph`), so an entity merged away since does not
count as a change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from evigraph.graphdata import redirect_graph
from evigraph.store.core.merge_plan import read_redirects
from evigraph.store.core.reader import Rows
from evigraph.store.core.version_rows import VersionRows, add_graph, chunk_id
from evigraph.store.graph_rewrite import DocumentGraph, FoundDocument, FoundPage, FoundPassage

MentionKey = tuple[str, str, tuple[int, ...], tuple[int, ...]]
"""(entity id, passage id, span starts, span ends)."""


@dataclass
class GraphRows:
    rows: VersionRows = field(default_factory=VersionRows)
    """Entities, mentions and relations of the documents that changed, as a version write has them."""
    chunks: list[str] = field(default_factory=list)
    """The passages of the documents that changed."""
    sentences: list[dict[str, Any]] = field(default_factory=list)
    """Those passages' bridge sentences: `{"id", "ss", "se"}`."""
    keys: list[str] = field(default_factory=list)
    """The documents that changed."""
    versions: dict[str, int] = field(default_factory=dict)
    """Their versions, which a write checks are still current."""
    held: set[str] = field(default_factory=set)
    """The entities their passages mention now: orphans, perhaps, once the new graphs are in."""


FOUND_PASSAGES = """RETURN d.key AS key, d.version AS version, d.title AS title, c.`index` AS i, c.text AS text,
                  c.found_hits AS found
           ORDER BY key, i"""
"""What `found_page` reads of each passage of a page of documents, on both stores."""


def found_page(keys: Sequence[str], limit: int, rows: Iterable[dict[str, Any]]) -> FoundPage:
    """The page of `found_documents` for the document `keys` read (at most `limit`), from their
    passages' rows (`FOUND_PASSAGES`, ordered by key): a document with a passage that kept no
    found names is skipped."""
    docs = []
    for key, group in groupby(rows, key=lambda r: r["key"]):
        passages = list(group)
        if all(r["found"] is not None for r in passages):
            first = passages[0]
            found = tuple(FoundPassage(int(r["i"]), r["text"], r["found"]) for r in passages)
            docs.append(FoundDocument(key, int(first["version"]), first["title"] or "", found))
    return FoundPage(docs, keys[-1] if keys and len(keys) == limit else None)


def passage_ids(graph: DocumentGraph) -> dict[int, str]:
    return {i: chunk_id(graph.key, graph.version, i) for i in graph.indexes}


def redirected(read: Rows, graphs: Sequence[DocumentGraph]) -> list[DocumentGraph]:
    """The graphs with every merged-away entity id re-pointed at its survivor."""
    wanted = {e.id for g in graphs for e in g.graph.entities}
    found = read_redirects(read, wanted) if wanted else {}
    if not found:
        return list(graphs)
    return [DocumentGraph(g.key, g.version, redirect_graph(g.graph, found), g.indexes, g.sentences) for g in graphs]


def rewrite_plan(read: Rows, graphs: Sequence[DocumentGraph], spans: Callable[[Any], tuple[int, ...]]) -> GraphRows:
    """What replacing `graphs` changes, read through `read` (both stores write from it): the
    graphs of documents still at the version given, redirected, whose mentions differ from the
    stored ones. `spans` reads a stored mention's span offsets as the backend keeps them."""
    current = {
        r["key"]: int(r["version"])
        for r in read(
            "UNWIND $keys AS k MATCH (d:Document {key: k}) RETURN d.key AS key, d.version AS version",
            {"keys": [g.key for g in graphs]},
        )
    }
    todo = redirected(read, [g for g in graphs if current.get(g.key) == g.version])
    stored = [
        (r["e"], r["c"], spans(r["s"]), spans(r["t"]))
        for r in read(
            """UNWIND $ids AS cid MATCH (e:Entity)-[m:MENTIONED_IN]->(c:Chunk {id: cid})
               RETURN e.id AS e, c.id AS c, m.span_starts AS s, m.span_ends AS t""",
            {"ids": [cid for g in todo for cid in passage_ids(g).values()]},
        )
    ]
    return graph_rows(todo, stored)


def graph_rows(graphs: Sequence[DocumentGraph], stored: Iterable[MentionKey]) -> GraphRows:
    """The rows of the graphs whose mentions differ from `stored` (every mention of their passages)."""
    by_chunk: dict[str, set[MentionKey]] = {}
    for m in stored:
        by_chunk.setdefault(m[1], set()).add(m)
    out = GraphRows()
    for g in graphs:
        ids = passage_ids(g)
        new = {
            (m.entity_id, ids[m.chunk_index], tuple(s.start for s in m.spans), tuple(s.end for s in m.spans))
            for m in g.graph.mentions
            if m.chunk_index in ids
        }
        old = set().union(*(by_chunk.get(cid, set()) for cid in ids.values()))
        if new == old:
            continue
        out.keys.append(g.key)
        out.versions[g.key] = g.version
        out.held.update(m[0] for m in old)
        out.chunks.extend(ids.values())
        add_graph(out.rows, g.graph, ids)
        out.sentences.extend(
            {"id": ids[i], "ss": [s.start for s in spans], "se": [s.end for s in spans]}
            for i, spans in zip(g.indexes, g.sentences, strict=True)
        )
    return out
