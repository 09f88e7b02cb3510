"""Tools over passages: the multi-path `retrieve`, plain passage search, exact reads, navigation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from evigraph.errors import ToolError
from evigraph.evidence.ids import EvidenceId
from evigraph.evidence.items import EntityItem, PassageItem, PassageText, RelationItem
from evigraph.evidence.pack import Section
from evigraph.evidence.render import evidence_sections, passage_block, passages_section
from evigraph.retrieval.match import MatchQuality
from evigraph.retrieval.navigation import Relation
from evigraph.retrieval.query import RetrieveInput
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.inputs import NavigateInput, ReadPassagesInput, SearchPassagesInput
from evigraph.tools.results import PASSAGE_LINE_CHARS, ToolResult, key_values

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()


class RetrieveResult(ToolResult):
    question: str
    paths: list[str]
    passages: list[PassageItem] = Field(default_factory=list)
    entities: list[EntityItem] = Field(default_factory=list)
    relations: list[RelationItem] = Field(default_factory=list)
    facts: list[RelationItem] = Field(default_factory=list)
    match: MatchQuality | None = Field(None, description="how closely the best passages match the question")

    def header(self) -> str:
        return f"retrieve: {self.question}"

    def sections(self) -> list[Section]:
        return evidence_sections(
            self.passages, self.entities, self.relations, self.facts, passage_cap=PASSAGE_LINE_CHARS
        )


@TOOLS.tool(
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
    found = await tk.kb.retrieve(args, ledger=tk.ledger)
    result = RetrieveResult(
        question=args.question,
        paths=found.paths,
        passages=[p for p in found.passages if p.n],
        entities=found.entities,
        relations=found.relations,
        facts=found.facts,
        match=found.match,
    )
    if not (result.passages or result.entities or result.relations or result.facts):
        result.hint = "nothing matched: rephrase with names or words the documents use, or check status"
    elif found.match is not None:
        result.hint = found.match.hint
    return result


# -- search_passages -------------------------------------------------------------------------


class PassageSearchResult(ToolResult):
    query: str
    mode: str
    hits: list[PassageItem] = Field(default_factory=list)
    index_state: dict[str, str | int] = Field(default_factory=dict)
    match: MatchQuality | None = Field(None, description="how closely the best passages match the query")

    def header(self) -> str:
        return f"search_passages ({self.mode}): {self.query}" + (
            f" [{key_values(dict(self.index_state))}]" if self.index_state else ""
        )

    def sections(self) -> list[Section]:
        return [passages_section(self.hits, line_cap=PASSAGE_LINE_CHARS)]


@TOOLS.tool(
    "search_passages",
    SearchPassagesInput,
    "Ranked passage snippets for plain words: lexical (BM25), semantic (vectors, needs the embedder the "
    "knowledge base was built with) or hybrid (both, fused). Use read_passages for a passage's full text.",
)
async def search_passages(tk: Toolkit, args: SearchPassagesInput) -> PassageSearchResult:
    found = await tk.kb.search_passages(args.query, mode=args.mode, limit=args.limit)
    tk.ledger.cite("search_passages", found.hits)
    result = PassageSearchResult(query=args.query, mode=args.mode, hits=found.hits, match=found.match)
    if found.pending_embeddings is not None:
        result.index_state["pending_embeddings"] = found.pending_embeddings
    hints = []
    if found.semantic_skipped:
        hints.append("semantic leg skipped: no embedder or no vectors; results are lexical only")
    if found.match is not None and found.match.hint and found.hits:
        hints.append(found.match.hint)
    result.hint = "; ".join(hints) or None
    return result


# -- read_passages ---------------------------------------------------------------------------


class PassageReadResult(ToolResult):
    passages: list[PassageText] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="references that name no current passage")

    def sections(self) -> list[Section]:
        return [
            Section("Passages", [passage_block(p, p.citation) for p in self.passages], 2.0),
            Section("Not found", list(self.missing)),
        ]


def _read_description(tk: Toolkit) -> str:
    return (
        f"The exact stored text of passages, by evidence number [n] or evidence id (up to {tk.limits.max_fetch_ids}), "
        "each with a citation line (title, path, location). Use it before quoting a passage found by a search."
    )


@TOOLS.tool("read_passages", ReadPassagesInput, _read_description)
async def read_passages(tk: Toolkit, args: ReadPassagesInput) -> PassageReadResult:
    """Reads what it can: a reference that names no passage is reported beside the others (as
    `get_context` does), since failing the call made the agent re-ask for passages it had. A call
    in which no reference names a passage is refused, with the first reason."""
    ids: list[str] = []
    unresolved: list[str] = []
    refused: ToolError | None = None
    for ref in args.passages:
        try:
            ids.append(tk.resolve(ref, "passage").id)
        except ToolError as exc:
            refused = refused or exc
            unresolved.append(f"{f'[{ref}]' if isinstance(ref, int) else ref}: {exc.message}")
    if refused is not None and not ids:
        raise refused
    found = await tk.kb.read_passages(ids, max_chars=args.max_chars) if ids else None
    passages = found.passages if found else []
    gone = [str(EvidenceId("passage", cid)) for cid in found.missing] if found else []
    tk.ledger.cite("read_passages", passages)
    tk.ledger.mark_read(p for p in passages if p.n and not p.partial)
    result = PassageReadResult(passages=passages, missing=[*unresolved, *gone])
    hints = []
    if unresolved:
        hints.append("some references are not passage evidence of this session; use numbers a search returned")
    if gone:
        hints.append("missing passages belong to a replaced or deleted document version; search again")
    result.hint = "; ".join(hints) or None
    return result


# -- navigate_document -----------------------------------------------------------------------


class NavigationResult(ToolResult):
    anchor: str = Field(description="evidence id of the passage navigated from")
    relation: Relation
    items: list[PassageText] = Field(default_factory=list)
    truncated: bool = False
    truncation_reason: str | None = None

    def header(self) -> str:
        return f"navigate_document {self.relation} of {self.anchor}"

    def sections(self) -> list[Section]:
        return [Section("Passages", [passage_block(p, p.citation) for p in self.items], 2.0)]


@TOOLS.tool(
    "navigate_document",
    NavigateInput,
    "Passages near a known passage in the same document version: parent (the enclosing section's opening), "
    "children (passages under its heading), siblings (same section), previous, next, table_context (around "
    "a table, or the tables of its section). Bounded by limit and max_chars.",
)
async def navigate_document(tk: Toolkit, args: NavigateInput) -> NavigationResult:
    anchor = tk.resolve(args.passage, "passage")
    walk = await tk.kb.navigate_document(anchor.id, args.relation, limit=args.limit, max_chars=args.max_chars)
    tk.ledger.cite("navigate_document", walk.items)
    result = NavigationResult(
        anchor=str(anchor),
        relation=args.relation,
        items=walk.items,
        truncated=walk.truncated,
        truncation_reason=walk.truncation_reason,
    )
    if not walk.found:
        result.hint = f"no {args.relation} passage: try another relation"
    return result
