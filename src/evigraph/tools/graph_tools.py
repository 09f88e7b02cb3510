"""Tools about the graph: its counts and schema, entities, relations, themes, and read-only Cypher."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from evigraph.errors import CypherRefused, ReadOnlyQueryError, ToolError
from evigraph.models import TableInfo, ThemeRecord
from evigraph.retrieval.analysis import question_phrases
from evigraph.retrieval.context import Section
from evigraph.retrieval.fusion import rrf
from evigraph.retrieval.result import EntityItem, RelationItem
from evigraph.retrieval.retriever import relation_item, source_of
from evigraph.tools.inputs import CypherInput, ExploreInput, NoInput, SearchEntitiesInput, SearchThemesInput
from evigraph.tools.passage_tools import PassageHit, semantic_chunks, snippet
from evigraph.tools.registry import tool
from evigraph.tools.results import ToolResult, entity_line, key_values, num, passages_section, relation_line

if TYPE_CHECKING:
    from evigraph.store.base import GraphStore
    from evigraph.tools.toolkit import Toolkit

CYPHER_TIMEOUT_MS = 10_000
CYPHER_HINT = "cypher_query only reads: use MATCH ... RETURN (call get_ontology for labels and properties)"
THEME_NAMES_SHOWN = 5


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


# -- status ----------------------------------------------------------------------------------


class StatusResult(ToolResult):
    n: int = 0
    evidence_id: str = ""
    documents: int
    chunks: int
    entities: int
    relations: int
    labels: dict[str, int]
    relation_types: dict[str, int]
    embedding_model: str | None
    pending_embeddings: int
    themes: int

    def header(self) -> str:
        return f"[{self.n}] " + self.content()

    def content(self) -> str:
        counts = key_values(
            {
                "documents": self.documents,
                "passages": self.chunks,
                "entities": self.entities,
                "relations": self.relations,
                "themes": self.themes,
            }
        )
        lines = [f"Knowledge base: {counts}."]
        if self.labels:
            lines.append("Entity labels: " + key_values(dict(self.labels)) + ".")
        if self.relation_types:
            lines.append("Relation types: " + key_values(dict(self.relation_types)) + ".")
        model = self.embedding_model or "none"
        lines.append(f"Embedding model: {model}; pending embeddings: {self.pending_embeddings}.")
        return "\n".join(lines)


@tool(
    "status",
    NoInput,
    "Counts of documents, passages, entities, relations and themes; every entity label and relation type with "
    "its count; the embedding model and pending embeddings. The result is one evidence number, so an answer "
    "about the knowledge base itself can cite it.",
)
async def status(tk: Toolkit, args: NoInput) -> StatusResult:
    st = await tk.kb.status()
    store = await tk.reader()
    result = StatusResult(
        documents=st.documents,
        chunks=st.chunks,
        entities=st.entities,
        relations=st.relations,
        labels=st.labels,
        relation_types=st.relation_types,
        embedding_model=st.embedding_model,
        pending_embeddings=st.pending_embeddings,
        themes=len(await store.themes()),
    )
    content = result.content()
    result.evidence_id = f"status:{_digest(content)}"
    result.n = tk.cite(result.evidence_id, "status", "status", content)
    if st.documents == 0:
        result.hint = "the knowledge base is empty: ingest documents first"
    return result


# -- get_ontology ----------------------------------------------------------------------------


class EntityTypeOut(BaseModel):
    label: str
    description: str = ""
    properties: list[str] = Field(default_factory=list)
    count: int = 0


class RelationTypeOut(BaseModel):
    label: str
    description: str = ""
    patterns: list[tuple[str, str]] = Field(default_factory=list, description="empty: any pair of labels")
    count: int = 0


CYPHER_GUIDE = (
    "Entities are (:Entity) nodes with id, name, label, description; filter a type with e.label = 'Person'. "
    "Relations are [:RELATES] edges with type, fact, confidence, source_chunks; filter with r.type = 'X'. "
    "Passages are (:Chunk) nodes (id, document, index, text) linked (:Chunk)-[:PART_OF]->(:Document) and "
    "(:Entity)-[:MENTIONED_IN]->(:Chunk). Example: MATCH (a:Entity)-[r:RELATES]->(b:Entity) "
    "WHERE a.name = 'Ada Lovelace' RETURN r.type, b.name, r.fact LIMIT 20"
)


class OntologyResult(ToolResult):
    n: int = 0
    evidence_id: str = ""
    entity_types: list[EntityTypeOut]
    relation_types: list[RelationTypeOut]
    tables: list[TableInfo]
    cypher_guide: str = CYPHER_GUIDE

    def content(self) -> str:
        lines = ["Entity types: " + "; ".join(_entity_type_text(e) for e in self.entity_types)]
        lines.append("Relation types: " + "; ".join(_relation_type_text(r) for r in self.relation_types))
        return "\n".join(lines)

    def header(self) -> str:
        return f"[{self.n}] " + self.content()

    def sections(self) -> list[Section]:
        tables = []
        for t in self.tables:
            props = ", ".join(f"{k} {v}" for k, v in t.properties.items())
            extra = (
                f" samples: {', '.join(t.sample_keys)}"
                if t.sample_keys
                else (f" connects {', '.join(f'{a}->{b}' for a, b in t.connects)}" if t.connects else "")
            )
            tables.append(f"{t.name} ({t.kind}, {num(t.rows)} rows): {props}.{extra}")
        return [Section("Cypher schema", [*tables, self.cypher_guide])]


def _entity_type_text(e: EntityTypeOut) -> str:
    text = f"{e.label} ({e.count})"
    if e.description:
        text += f": {e.description}"
    return text + (f" [properties: {', '.join(e.properties)}]" if e.properties else "")


def _relation_type_text(r: RelationTypeOut) -> str:
    pats = ", ".join(f"{a}->{b}" for a, b in r.patterns) or "any"
    return f"{r.label} ({r.count}; {pats})" + (f": {r.description}" if r.description else "")


@tool(
    "get_ontology",
    NoInput,
    "The declared entity types (descriptions, properties, counts) and relation types with their (source, "
    "target) patterns, plus what a Cypher query needs: node and relationship tables, property names, sample "
    "keys and an example. Call it before cypher_query. The result is one evidence number.",
)
async def get_ontology(tk: Toolkit, args: NoInput) -> OntologyResult:
    store = await tk.reader()
    ontology = await tk.kb.get_ontology()
    counts = await store.counts()
    entity_types = [
        EntityTypeOut(
            label=e.label, description=e.description, properties=list(e.properties), count=counts.labels.get(e.label, 0)
        )
        for e in ontology.entities
    ]
    declared = {e.label for e in ontology.entities}
    entity_types += [
        EntityTypeOut(label=label, description="(stored, not declared)", count=n)
        for label, n in counts.labels.items()
        if label not in declared
    ]
    relation_types = [
        RelationTypeOut(
            label=r.type,
            description=r.description,
            patterns=[tuple(p) for p in r.patterns],
            count=counts.relation_types.get(r.type, 0),
        )
        for r in ontology.relations
    ]
    result = OntologyResult(
        entity_types=entity_types, relation_types=relation_types, tables=await store.schema_tables()
    )
    content = result.content()
    result.evidence_id = f"ontology:{_digest(content)}"
    result.n = tk.cite(result.evidence_id, "get_ontology", "ontology", content)
    return result


# -- search_entities -------------------------------------------------------------------------


class EntityCard(EntityItem):
    support: list[PassageHit] = Field(default_factory=list, description="passages that mention it")


class EntitySearchResult(ToolResult):
    query: str
    hits: list[EntityCard] = Field(default_factory=list)

    def sections(self) -> list[Section]:
        entities = [entity_line(e) + (f" (id {e.id})") for e in self.hits]
        support = [p for e in self.hits for p in e.support]
        return [Section("Entities", entities), passages_section(support, "Mentioned in")]


@tool(
    "search_entities",
    SearchEntitiesInput,
    "Entities by name (lexical: exact names in the query and full-text on names and descriptions) or by "
    "meaning (semantic: entities mentioned in the passages closest to the query), or both (hybrid). "
    "`labels` filters by entity type. Each entity comes with up to 3 passages that mention it.",
)
async def search_entities(tk: Toolkit, args: SearchEntitiesInput) -> EntitySearchResult:
    store = await tk.reader()
    pool = args.limit * 3
    lists: dict[str, list[str]] = {}
    if args.mode in ("lexical", "hybrid"):
        named = await store.entities_named([*question_phrases(args.query), args.query])
        lists["exact"] = list(dict.fromkeys(eid for ids in named.values() for eid in ids))
        lists["lexical"] = [e.id for e in await store.search_entities(args.query, pool)]
    result = EntitySearchResult(query=args.query)
    if args.mode in ("semantic", "hybrid"):
        chunks = await semantic_chunks(tk, store, args.query, pool)
        if chunks is None:
            if args.mode == "semantic":
                raise ToolError(
                    "semantic entity search needs passage vectors",
                    hint="use mode='lexical', or serve with the embedder",
                )
            result.hint = "semantic leg skipped: no embedder or no vectors"
        else:
            rank = {cid: i for i, cid in enumerate(chunks)}
            pairs = sorted(await store.entities_for_chunks(chunks), key=lambda p: rank[p[0]])
            lists["semantic"] = list(dict.fromkeys(eid for _, eid in pairs))
    fused = [f.key for f in rrf({k: v for k, v in lists.items() if v})]
    found = {e.id: e for e in await store.entities_by_ids(fused[: pool * 2])}
    wanted = set(args.labels or ())
    for key in fused:
        ent = found.get(key)
        if ent is None or (wanted and ent.label not in wanted):
            continue
        result.hits.append(EntityCard(id=ent.id, name=ent.name, label=ent.label, description=ent.description))
        if len(result.hits) >= args.limit:
            break
    mentions = await store.chunks_for_entities([e.id for e in result.hits], per_entity=3)
    texts = {h.id: h for h in await store.chunks_by_ids(list(dict.fromkeys(cid for _, cid in mentions)))}
    cards = {e.id: e for e in result.hits}
    for owner, cid in mentions:
        hit = texts.get(cid)
        if hit is not None:
            text = snippet(hit.text, cards[owner].name)
            cards[owner].support.append(
                PassageHit(id=hit.id, text=text, partial=len(text) < len(hit.text), source=source_of(hit))
            )
    tk.cite_entities("search_entities", result.hits)
    for e in result.hits:
        tk.cite_passages("search_entities", e.support)
    if not result.hits and wanted:
        result.hint = "no entity with those labels matched: check the labels with get_ontology"
    return result


# -- explore_relationships -------------------------------------------------------------------


class ExplorationResult(ToolResult):
    entity: str
    nodes: list[EntityItem] = Field(default_factory=list)
    edges: list[RelationItem] = Field(default_factory=list)
    truncated: bool = False
    truncated_by: list[str] = Field(default_factory=list)

    def sections(self) -> list[Section]:
        return [
            Section("Entities", [entity_line(e) + f" (id {e.id})" for e in self.nodes]),
            Section("Relations", [relation_line(r) for r in self.edges], 2.0),
        ]


async def _entity_id(tk: Toolkit, store: GraphStore, ref: int | str) -> str:
    eid = tk.evidence_id(ref, "entity:").removeprefix("entity:")
    if await store.entities_by_ids([eid]):
        return eid
    named = list(dict.fromkeys(e for ids in (await store.entities_named([str(ref)])).values() for e in ids))
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise ToolError(f"{ref!r} names {len(named)} entities: {', '.join(named[:5])}", hint="pass one entity id")
    raise ToolError(f"no entity {ref!r}", hint="find it with search_entities and pass its id or evidence number")


@tool(
    "explore_relationships",
    ExploreInput,
    "The relations around one entity (its id, evidence number or exact name), depth 1-2, optionally only "
    "some relation types, bounded by max_nodes and max_edges; says when the bounds cut the neighbourhood.",
)
async def explore_relationships(tk: Toolkit, args: ExploreInput) -> ExplorationResult:
    store = await tk.reader()
    eid = await _entity_id(tk, store, args.entity)
    walk = await store.explore(eid, args.depth, args.relation_types, args.max_nodes, args.max_edges)
    details = {e.id: e for e in await store.entities_by_ids(walk.nodes)}
    result = ExplorationResult(
        entity=f"entity:{eid}", truncated=bool(walk.truncated_by), truncated_by=walk.truncated_by
    )
    result.nodes = [
        EntityItem(id=d.id, name=d.name, label=d.label, description=d.description)
        for d in (details.get(n) for n in walk.nodes)
        if d is not None
    ]
    result.edges = [relation_item(r) for r in walk.edges]
    tk.cite_entities("explore_relationships", result.nodes)
    tk.cite_relations("explore_relationships", result.edges)
    if result.truncated:
        result.hint = f"cut by {' and '.join(walk.truncated_by)}: raise them or filter relation_types"
    elif not result.edges:
        result.hint = "no relations" + (" of those types" if args.relation_types else "") + " around this entity"
    return result


# -- search_themes ---------------------------------------------------------------------------


class ThemeHit(BaseModel):
    n: int = 0
    evidence_id: str
    theme_id: str
    score: float
    size: int
    entities: list[str] = Field(description=f"up to {THEME_NAMES_SHOWN} member names, most connected first")
    passages: list[PassageHit] = Field(default_factory=list)


class ThemeSearchResult(ToolResult):
    query: str
    themes: list[ThemeHit] = Field(default_factory=list)
    index_state: str = "ready"

    def sections(self) -> list[Section]:
        lines = [f"[{t.n}] {', '.join(t.entities)} ({t.size} entities)" for t in self.themes]
        return [Section("Themes", lines), passages_section([p for t in self.themes for p in t.passages])]


@dataclass
class _ThemeIndex:
    themes: list[ThemeRecord]
    by_member: dict[str, list[int]]
    by_name: dict[str, list[int]]


_theme_index_cache: list[_ThemeIndex] = []


def _theme_index(themes: list[ThemeRecord]) -> _ThemeIndex:
    """Member and name look-ups over the themes, built once per themes list the store hands out.

    The store returns the same list object until a write, so identity is the cache key.
    """
    if _theme_index_cache and _theme_index_cache[0].themes is themes:
        return _theme_index_cache[0]
    by_member: dict[str, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i, t in enumerate(themes):
        for m in t.members:
            by_member.setdefault(m, []).append(i)
        for name in t.names:
            by_name.setdefault(name.casefold(), []).append(i)
    index = _ThemeIndex(themes, by_member, by_name)
    _theme_index_cache[:] = [index]
    return index


@tool(
    "search_themes",
    SearchThemesInput,
    "Themes: clusters of related entities found by community detection at finalize, ranked for the query "
    "by the passages and names that match it; each with member names and supporting passages. Use it for "
    "broad questions (what are the main topics, which groups exist).",
)
async def search_themes(tk: Toolkit, args: SearchThemesInput) -> ThemeSearchResult:
    store = await tk.reader()
    result = ThemeSearchResult(query=args.query)
    themes = await store.themes()
    if not themes:
        result.index_state = "missing"
        result.hint = "no themes yet: run finalize after ingesting (themes need relations between entities)"
        return result
    chunks = [h.id for h in await store.search_chunks(args.query, 30)]
    semantic = await semantic_chunks(tk, store, args.query, 30)
    ranked = [f.key for f in rrf({"lexical": chunks, "semantic": semantic or []})]
    weight: dict[str, float] = {}
    rank = {cid: i for i, cid in enumerate(ranked)}
    for cid, eid in await store.entities_for_chunks(ranked):
        weight[eid] = weight.get(eid, 0.0) + 1.0 / (60 + rank[cid])
    terms = {t.casefold() for t in question_phrases(args.query)} | set(args.query.casefold().split())
    index = _theme_index(themes)
    scores: dict[int, float] = {}
    for eid, w in weight.items():
        for i in index.by_member.get(eid, ()):
            scores[i] = scores.get(i, 0.0) + w
    for term in terms:
        for i in index.by_name.get(term, ()):
            scores[i] = scores.get(i, 0.0) + 1.0 / 60
    top = sorted(scores.items(), key=lambda kv: (-kv[1], themes[kv[0]].id))[: args.limit]
    chosen = [(score, themes[i]) for i, score in top]
    # Supporting passages for every chosen theme in two store calls: the passages that mention most members.
    mentions = await store.chunks_for_entities([m for _, t in chosen for m in t.members[:20]], per_entity=3)
    member_of = {m: t.id for _, t in chosen for m in t.members[:20]}
    per_theme: dict[str, Counter[str]] = {}
    for eid, cid in mentions:
        per_theme.setdefault(member_of[eid], Counter())[cid] += 1
    support = {
        t.id: [cid for cid, _ in per_theme.get(t.id, Counter()).most_common(args.support_limit)] for _, t in chosen
    }
    texts = {
        h.id: h for h in await store.chunks_by_ids(list(dict.fromkeys(c for ids in support.values() for c in ids)))
    }
    for score, t in chosen:
        hits = [texts[c] for c in support[t.id] if c in texts]
        names = " ".join(t.names[:5])
        passages = []
        for h in hits:
            text = snippet(h.text, names)
            passages.append(PassageHit(id=h.id, text=text, partial=len(text) < len(h.text), source=source_of(h)))
        hit = ThemeHit(
            evidence_id=t.id,
            theme_id=t.id,
            score=score,
            size=t.size,
            entities=t.names[:THEME_NAMES_SHOWN],
            passages=passages,
        )
        members = ", ".join(f"{n} ({lb})" for n, lb in zip(t.names, t.labels, strict=True))
        hit.n = tk.cite(t.id, "search_themes", "theme", f"Theme of related entities: {members}")
        tk.cite_passages("search_themes", passages)
        result.themes.append(hit)
    if not result.themes:
        result.hint = "no theme matches the query: try other words, or search_entities"
    return result


# -- cypher_query ----------------------------------------------------------------------------


class CypherResult(ToolResult):
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    truncated: bool = False

    def header(self) -> str:
        return f"{len(self.rows)} row(s)" + (" (truncated at the limit)" if self.truncated else "")

    def sections(self) -> list[Section]:
        return [Section("Rows", [json.dumps(r, ensure_ascii=False, default=str) for r in self.rows], 2.0)]


_HIDDEN_KEYS = frozenset({"_id", "_src", "_dst", "embedding", "search_text"})


def clean_value(value: Any) -> Any:
    """JSON-safe values without engine internals (node ids, vectors, index text)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _HIDDEN_KEYS:
                continue
            out["table" if k == "_label" else k] = clean_value(v)
        return out
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


@tool(
    "cypher_query",
    CypherInput,
    "Read-only Cypher over the graph (one statement; MATCH ... RETURN), run in a read-only transaction with "
    f"a row limit and a {CYPHER_TIMEOUT_MS // 1000} s time limit. Call get_ontology first for table and "
    "property names. Errors come back with a hint.",
)
async def cypher_query(tk: Toolkit, args: CypherInput) -> CypherResult:
    store = await tk.reader()
    try:
        # The store guards the query (one read statement, allow-listed functions and procedures,
        # the engine's plan checked, rows and sizes bounded); refusals carry their own hint.
        rows = await store.query(args.query, args.params, limit=args.limit + 1, timeout_ms=CYPHER_TIMEOUT_MS)
    except CypherRefused as exc:
        raise ToolError(exc.message, hint=exc.hint or CYPHER_HINT) from exc
    except ReadOnlyQueryError as exc:
        raise ToolError(exc.message, hint=await _query_hint(store, exc.message)) from exc
    result = CypherResult(truncated=len(rows) > args.limit or bool(getattr(rows, "truncated", False)))
    result.rows = [clean_value(r) for r in rows[: args.limit]]
    result.columns = list(rows[0]) if rows else []
    return result


async def _query_hint(store: GraphStore, message: str) -> str:
    lowered = message.lower()
    if "interrupt" in lowered or "timeout" in lowered:
        return "the query ran out of time: add a LIMIT, filter earlier, or walk fewer hops"
    if "read-only" in lowered:
        return CYPHER_HINT
    tables = [t.name for t in await store.schema_tables()]
    labels = list((await store.counts()).labels)
    return (
        f"tables: {', '.join(tables)}; entity labels (values of e.label): {', '.join(labels[:30]) or 'none'}; "
        "see get_ontology"
    )
