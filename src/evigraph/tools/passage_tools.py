"""Tools over passages: the multi-path `retrieve`, plain passage search, exact reads, navigation."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import Field

from evigraph.errors import ToolError
from evigraph.models import ChunkHit
from evigraph.retrieval.context import Section
from evigraph.retrieval.fusion import rrf
from evigraph.retrieval.result import EntityItem, PassageItem, RelationItem
from evigraph.retrieval.retriever import MultiPathRetriever, source_of
from evigraph.tools.inputs import NavigateInput, ReadPassagesInput, RetrieveInput, SearchPassagesInput
from evigraph.tools.registry import tool
from evigraph.tools.results import (
    ToolResult,
    citation_line,
    entity_line,
    key_values,
    passages_section,
    relation_line,
)

if TYPE_CHECKING:
    from evigraph.store.base import GraphStore
    from evigraph.tools.toolkit import Toolkit

SNIPPET_CHARS = 400
_WORD = re.compile(r"\w+", re.UNICODE)


class RetrieveResult(ToolResult):
    question: str
    paths: list[str]
    passages: list[PassageItem] = Field(default_factory=list)
    entities: list[EntityItem] = Field(default_factory=list)
    relations: list[RelationItem] = Field(default_factory=list)
    facts: list[RelationItem] = Field(default_factory=list)

    def header(self) -> str:
        return f"retrieve: {self.question}"

    def sections(self) -> list[Section]:
        return [
            passages_section(self.passages),
            Section("Entities", [entity_line(e) for e in self.entities]),
            Section("Relations", [relation_line(r) for r in self.relations]),
            Section("Facts", [relation_line(f) for f in self.facts]),
        ]


@tool(
    "retrieve",
    RetrieveInput,
    "Hybrid search for a question: the passages, entities, relations and facts that answer it, each with an "
    "evidence number [n] to cite. Call it first with the user's question word for word. Paths: passages "
    "(full-text + vectors), exact_names (entities named in the question), fuzzy_names (full-text on names), "
    "links (relations around the entities found, expand_hops 1-5; at most 4 x top_k, 40 at most, shared "
    "across hops), facts (relation sentences matching the question). If the answer is missing, call again "
    "with exact names from what you found or expand_hops 2-3.",
)
async def retrieve(tk: Toolkit, args: RetrieveInput) -> RetrieveResult:
    found = await tk.kb.retrieve(args.question, paths=args.paths, top_k=args.top_k, expand_hops=args.expand_hops)
    tk.cite_passages("retrieve", found.passages)
    tk.cite_entities("retrieve", found.entities)
    tk.cite_relations("retrieve", found.relations)
    tk.cite_relations("retrieve", found.facts, kind="fact")
    result = RetrieveResult(
        question=args.question,
        paths=found.paths,
        passages=[p for p in found.passages if p.n],
        entities=found.entities,
        relations=found.relations,
        facts=found.facts,
    )
    if not (result.passages or result.entities or result.relations or result.facts):
        result.hint = "nothing matched: rephrase with names or words the documents use, or check status"
    return result


# -- search_passages -------------------------------------------------------------------------


class PassageHit(PassageItem):
    partial: bool = Field(False, description="text is a snippet; read_passages gives the whole passage")


class PassageSearchResult(ToolResult):
    query: str
    mode: str
    hits: list[PassageHit] = Field(default_factory=list)
    index_state: dict[str, str | int] = Field(default_factory=dict)

    def header(self) -> str:
        return f"search_passages ({self.mode}): {self.query}" + (
            f" [{key_values(dict(self.index_state))}]" if self.index_state else ""
        )

    def sections(self) -> list[Section]:
        return [passages_section(list(self.hits))]


async def semantic_chunks(tk: Toolkit, store: GraphStore, query: str, limit: int) -> list[str] | None:
    """Chunk ids nearest to `query` by meaning, or None without an embedder or stored vectors."""
    if tk.kb.embedder is None:
        return None
    vector = await MultiPathRetriever(store, tk.kb.embedder).embed_question(query)
    return None if vector is None else [cid for cid, _ in await store.vector_search(vector, limit)]


def snippet(text: str, query: str, size: int = SNIPPET_CHARS) -> str:
    """About `size` characters of `text` around its first word from `query`, cut at word boundaries."""
    if len(text) <= size:
        return text
    terms = {t.casefold() for t in _WORD.findall(query) if len(t) > 2}
    start = 0
    for m in _WORD.finditer(text):
        if m.group().casefold() in terms:
            start = max(0, m.start() - size // 4)
            break
    piece = text[start : start + size]
    if start > 0:
        piece = "…" + piece.split(" ", 1)[-1]
    if start + size < len(text):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return piece


@tool(
    "search_passages",
    SearchPassagesInput,
    "Ranked passage snippets for plain words: lexical (BM25), semantic (vectors, needs the embedder the "
    "knowledge base was built with) or hybrid (both, fused). Use read_passages for a passage's full text.",
)
async def search_passages(tk: Toolkit, args: SearchPassagesInput) -> PassageSearchResult:
    store = await tk.reader()
    result = PassageSearchResult(query=args.query, mode=args.mode)
    lists: dict[str, list[str]] = {}
    hits: dict[str, ChunkHit] = {}
    if args.mode in ("lexical", "hybrid"):
        lexical = await store.search_chunks(args.query, args.limit * 2)
        hits.update({h.id: h for h in lexical})
        lists["lexical"] = [h.id for h in lexical]
    if args.mode in ("semantic", "hybrid"):
        semantic = await semantic_chunks(tk, store, args.query, args.limit * 2)
        if semantic is None:
            if args.mode == "semantic":
                raise ToolError(
                    "semantic search needs passage vectors, and this knowledge base has none for this embedder",
                    hint="use mode='lexical', or serve the knowledge base with the embedder it was built with "
                    "and run finalize",
                )
            result.hint = "semantic leg skipped: no embedder or no vectors; results are lexical only"
        else:
            lists["semantic"] = semantic
            result.index_state["pending_embeddings"] = await store.count_pending_embeddings()
    fused = rrf({k: v for k, v in lists.items() if v})[: args.limit]
    missing = [f.key for f in fused if f.key not in hits]
    hits.update({h.id: h for h in await store.chunks_by_ids(missing)})
    for f in fused:
        hit = hits.get(f.key)
        if hit is None:
            continue
        text = snippet(hit.text, args.query)
        result.hits.append(
            PassageHit(
                id=hit.id,
                text=text,
                partial=len(text) < len(hit.text),
                score=f.score,
                scores=f.scores,
                paths=sorted(f.scores),
                source=source_of(hit),
            )
        )
    tk.cite_passages("search_passages", result.hits)
    return result


# -- read_passages ---------------------------------------------------------------------------


class PassageText(PassageItem):
    partial: bool = Field(False, description="cut at max_chars")
    citation: str = Field("", description="title, path and location, ready to cite")


class PassageReadResult(ToolResult):
    passages: list[PassageText] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="references that name no current passage")

    def sections(self) -> list[Section]:
        return [
            Section("Passages", [f"[{p.n}] {p.citation}\n{p.text}" for p in self.passages], 2.0),
            Section("Not found", list(self.missing)),
        ]


@tool(
    "read_passages",
    ReadPassagesInput,
    "The exact stored text of passages, by evidence number [n] or evidence id (up to 20), each with a "
    "citation line (title, path, location). Use it before quoting a passage found by a search.",
)
async def read_passages(tk: Toolkit, args: ReadPassagesInput) -> PassageReadResult:
    store = await tk.reader()
    wanted = {str(ref): tk.evidence_id(ref, "passage:") for ref in args.passages}
    ids = list(dict.fromkeys(e.removeprefix("passage:") for e in wanted.values()))
    found = {h.id: h for h in await store.chunks_by_ids(ids)}
    result = PassageReadResult()
    for cid in ids:
        hit = found.get(cid)
        if hit is None:
            result.missing.append(f"passage:{cid}")
            continue
        text = hit.text[: args.max_chars]
        source = source_of(hit)
        result.passages.append(
            PassageText(
                id=hit.id,
                text=text,
                partial=len(text) < len(hit.text),
                source=source,
                citation=citation_line(source),
            )
        )
    tk.cite_passages("read_passages", result.passages)
    if result.missing:
        result.hint = "missing passages belong to a replaced or deleted document version; search again"
    return result


# -- navigate_document -----------------------------------------------------------------------


class NavigationResult(ToolResult):
    anchor: str = Field(description="evidence id of the passage navigated from")
    relation: str
    items: list[PassageText] = Field(default_factory=list)
    truncated: bool = False
    truncation_reason: str | None = None

    def header(self) -> str:
        return f"navigate_document {self.relation} of {self.anchor}"

    def sections(self) -> list[Section]:
        return [Section("Passages", [f"[{p.n}] {p.citation}\n{p.text}" for p in self.items], 2.0)]


def _is_table(text: str) -> bool:
    rows = [line for line in text.splitlines() if line.strip().startswith("|") and line.count("|") >= 2]
    return len(rows) >= 2


def neighbourhood(anchor: ChunkHit, chunks: list[ChunkHit], relation: str) -> list[ChunkHit]:
    """The passages of `chunks` (one document, reading order) standing in `relation` to `anchor`."""
    crumbs = anchor.breadcrumbs
    before = [c for c in chunks if c.index < anchor.index]
    after = [c for c in chunks if c.index > anchor.index]
    if relation == "previous":
        return before[::-1]
    if relation == "next":
        return after
    if relation == "siblings":
        return [c for c in chunks if c.breadcrumbs == crumbs and c.id != anchor.id]
    if relation == "children":
        return [c for c in after if len(c.breadcrumbs) > len(crumbs) and c.breadcrumbs[: len(crumbs)] == crumbs]
    if relation == "parent":
        if not crumbs:
            return []
        up = crumbs[:-1]
        exact = [c for c in chunks if c.breadcrumbs == up]
        return exact[:1] or [c for c in chunks if c.breadcrumbs[: len(up)] == up and c.id != anchor.id][:1]
    # table_context: around a table, its neighbours in the section; elsewhere, the section's tables
    section = [c for c in chunks if c.breadcrumbs == crumbs and c.id != anchor.id]
    if _is_table(anchor.text):
        near = sorted(section, key=lambda c: abs(c.index - anchor.index))
        return sorted(near[:2], key=lambda c: c.index)
    return [c for c in section if _is_table(c.text)]


@tool(
    "navigate_document",
    NavigateInput,
    "Passages near a known passage in the same document version: parent (the enclosing section's opening), "
    "children (passages under its heading), siblings (same section), previous, next, table_context (around "
    "a table, or the tables of its section). Bounded by limit and max_chars.",
)
async def navigate_document(tk: Toolkit, args: NavigateInput) -> NavigationResult:
    store = await tk.reader()
    anchor_id = tk.evidence_id(args.passage, "passage:")
    anchors = await store.chunks_by_ids([anchor_id.removeprefix("passage:")])
    if not anchors:
        raise ToolError(
            f"{anchor_id} is not a current passage", hint="its document was replaced or deleted; search again"
        )
    anchor = anchors[0]
    chunks = await store.document_chunks(anchor.document)
    picked = neighbourhood(anchor, chunks, args.relation)
    result = NavigationResult(anchor=anchor_id, relation=args.relation)
    budget = args.max_chars
    for hit in picked:
        if len(result.items) >= args.limit:
            result.truncated, result.truncation_reason = True, "limit"
            break
        if budget <= 0:
            result.truncated, result.truncation_reason = True, "max_chars"
            break
        text = hit.text[:budget]
        budget -= len(text)
        source = source_of(hit)
        result.items.append(
            PassageText(
                id=hit.id, text=text, partial=len(text) < len(hit.text), source=source, citation=citation_line(source)
            )
        )
    tk.cite_passages("navigate_document", result.items)
    if not picked:
        result.hint = f"no {args.relation} passage: try another relation"
    return result
