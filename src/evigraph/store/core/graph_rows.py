"""`graph_rows`: the graphs finalize gives documents again (`GraphRewriteStore.replace_graphs`)
as the rows both stores write them from, and which of them change anything.

A document's graph changed when its mentions did: relations are read off the mentions and the
passage's sentences (`cooccurrence`), entities off the names at the mentions' spans, so equal
mentions give an equal graph. The mentions compared are the stored ones against the new ones
after the merges finalize recorded (`redirect_graph`), so an entity merged away since does not
count as a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


FOUND_PASSAGES = """RETURN d.key AS key, d.version AS version, d.title AS title, c.index AS i, c.text AS text,
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


def mention_keys(rows: Iterable[dict[str, Any]]) -> set[MentionKey]:
    """Mention rows (`e`, `c`, `s`, `t` as lists of ints) as comparable keys."""
    return {(r["e"], r["c"], tuple(r["s"]), tuple(r["t"])) for r in rows}


def graph_rows(graphs: Sequence[DocumentGraph], stored: Iterable[MentionKey]) -> GraphRows:
    """The rows of the graphs whose mentions differ from `stored` (every mention of their passages)."""
    by_chunk: dict[str, set[MentionKey]] = {}
    for m in stored:
        by_chunk.setdefault(m[1], set()).add(m)
    out = GraphRows()
    for g in graphs:
        ids = passage_ids(g)
        mine = VersionRows()
        add_graph(mine, g.graph, ids)
        old = set().union(*(by_chunk.get(cid, set()) for cid in ids.values()))
        if mention_keys(mine.mentions) == old:
            continue
        out.keys.append(g.key)
        out.chunks.extend(ids.values())
        add_graph(out.rows, g.graph, ids)
        out.sentences.extend(
            {"id": ids[i], "ss": [s.start for s in spans], "se": [s.end for s in spans]}
            for i, spans in zip(g.indexes, g.sentences, strict=True)
        )
    return out
