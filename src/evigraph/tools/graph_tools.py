"""Tools about the graph: its counts and schema, entities, relations, themes, and read-only Cypher."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from pydantic import Field

from evigraph.code_records import CODE_QUERIES, SYMBOL_KINDS, SYMBOL_LINK_TYPES, kind_of
from evigraph.display import one_line
from evigraph.evidence.ids import EvidenceId, EvidenceKind
from evigraph.evidence.items import EntityCard, EntityItem, PassageItem, RelationItem, ThemeItem
from evigraph.evidence.pack import Section
from evigraph.evidence.render import entity_line, passages_section, relation_line, theme_line
from evigraph.models import SourceRecord, TableInfo
from evigraph.property_types import PropertyType
from evigraph.retrieval.schema import CYPHER_TIMEOUT_MS, EntityTypeView, RelationTypeView
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.inputs import CypherInput, ExploreInput, NoInput, SearchEntitiesInput, SearchThemesInput
from evigraph.tools.results import PASSAGE_LINE_CHARS, ToolResult, fields_of, key_values, num

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()


class WholeEvidence(ToolResult):
    """A result that is one piece of evidence whole (the status, the ontology), so an answer about
    the knowledge base itself can cite it; its id is a digest of its content, so the same
    content keeps its number within a session."""

    n: int = 0
    evidence_id: str = ""

    def content(self) -> str:
        raise NotImplementedError

    def header(self) -> str:
        return f"[{self.n}] " + self.content()

    def numbered(self, tk: Toolkit, kind: EvidenceKind, tool: str) -> None:
        content = self.content()
        digest = hashlib.sha1(content.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        self.evidence_id = str(EvidenceId(kind, digest))
        self.n = tk.ledger.record(self.evidence_id, tool, kind, content)


# -- status ----------------------------------------------------------------------------------


class StatusResult(WholeEvidence):
    documents: int
    passages: int
    entities: int
    relations: int
    labels: dict[str, int]
    relation_types: dict[str, int]
    code_repos: int = 0
    code_files: int = Field(0, description="source files held as code (ingest_code), one Module node each")
    code_symbols: dict[str, int] = Field(default_factory=dict, description="classes and functions per kind")
    embedding_model: str | None
    pending_embeddings: int
    themes: int
    failed_documents: int = Field(0, description="sources whose last ingest failed")
    failed_sources: list[SourceRecord] = Field(default_factory=list, description="the newest of them, with errors")

    def sections(self) -> list[Section]:
        # "- " first: a file named "[1] ..." must not start a line that reads as evidence
        lines = ["- " + one_line(f"{f.key}: {f.error or 'no reason recorded'}") for f in self.failed_sources]
        return [Section("Failed at their last ingest", lines)]

    def content(self) -> str:
        counts = key_values(
            {
                "documents": self.documents,
                "passages": self.passages,
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
        if self.code_files:
            code = {"repositories": self.code_repos, "files": self.code_files, **self.code_symbols}
            lines.append("Code: " + key_values(code) + ".")
        model = self.embedding_model or "none"
        lines.append(f"Embedding model: {model}; pending embeddings: {self.pending_embeddings}.")
        if self.failed_documents:
            lines.append(f"Documents whose last ingest failed: {self.failed_documents}.")
        return "\n".join(lines)


@TOOLS.tool(
    "status",
    NoInput,
    "Counts of documents, passages, entities, relations and themes; every entity label and relation type with "
    "its count; code ingested with ingest_code (repositories, files, classes, functions); the embedding model "
    "and pending embeddings; documents whose last ingest failed, with the errors. "
    "The result is one evidence number, so an answer about the knowledge base itself can cite it.",
)
async def status(tk: Toolkit, args: NoInput) -> StatusResult:
    st = await tk.kb.status()
    result = StatusResult.model_validate(fields_of(st, StatusResult))
    result.numbered(tk, "status", "status")
    if st.documents == 0:
        result.hint = "the knowledge base is empty: ingest documents first"
    return result


# -- get_ontology ----------------------------------------------------------------------------


class OntologyResult(WholeEvidence):
    entity_types: list[EntityTypeView]
    relation_types: list[RelationTypeView]
    tables: list[TableInfo]
    cypher_guide: str

    def content(self) -> str:
        lines = ["Entity types: " + "; ".join(_entity_type_text(e) for e in self.entity_types)]
        lines.append("Relation types: " + "; ".join(_relation_type_text(r) for r in self.relation_types))
        return "\n".join(lines)

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


def _entity_type_text(e: EntityTypeView) -> str:
    text = f"{e.label} ({e.count})"
    if e.description:
        text += f": {e.description}"
    return text + _properties_text(e.properties)


def _relation_type_text(r: RelationTypeView) -> str:
    pats = ", ".join(f"{a}->{b}" for a, b in r.patterns) or "any"
    return (
        f"{r.label} ({r.count}; {pats})"
        + (f": {r.description}" if r.description else "")
        + _properties_text(r.properties)
    )


def _properties_text(properties: list[PropertyType]) -> str:
    """' [properties: born date (when born), papers integer]', or '' when none are declared."""
    shown = [f"{p.name} {p.type}" + (f" ({p.description})" if p.description else "") for p in properties]
    return f" [properties: {', '.join(shown)}]" if shown else ""


@TOOLS.tool(
    "get_ontology",
    NoInput,
    "The declared entity types (descriptions, properties, counts) and relation types with their (source, "
    "target) patterns, plus what a Cypher query needs: node and relationship tables, property names, sample "
    "keys and an example. Call it before cypher_query. The result is one evidence number.",
)
async def get_ontology(tk: Toolkit, args: NoInput) -> OntologyResult:
    result = OntologyResult.model_validate(fields_of(await tk.kb.get_ontology(), OntologyResult))
    result.numbered(tk, "ontology", "get_ontology")
    return result


# -- search_entities -------------------------------------------------------------------------


class EntitySearchResult(ToolResult):
    query: str
    hits: list[EntityCard] = Field(default_factory=list)

    def sections(self) -> list[Section]:
        entities = [entity_line(e, with_id=True) for e in self.hits]
        support = [p for e in self.hits for p in e.support]
        return [Section("Entities", entities), passages_section(support, "Mentioned in", PASSAGE_LINE_CHARS)]


@TOOLS.tool(
    "search_entities",
    SearchEntitiesInput,
    "Entities by name (lexical: exact names in the query and full-text on names and descriptions) or by "
    "meaning (semantic: entities mentioned in the passages closest to the query), or both (hybrid). "
    f"Code symbols come too, labelled by kind ({', '.join(SYMBOL_KINDS)}; with their id, e.g. 'Class:repo:path#Name', "
    "and path:line_start-line_end). `labels` filters by entity type. Each comes with up to 3 passages that "
    "mention it.",
)
async def search_entities(tk: Toolkit, args: SearchEntitiesInput) -> EntitySearchResult:
    found = await tk.kb.search_entities(args.query, mode=args.mode, labels=args.labels, limit=args.limit)
    tk.ledger.cite("search_entities", found.hits)
    for e in found.hits:
        tk.ledger.cite("search_entities", e.support)
    result = EntitySearchResult(query=args.query, hits=found.hits)
    if found.semantic_skipped:
        result.hint = "semantic leg skipped: no embedder or no vectors"
    if not result.hits and args.labels:
        result.hint = "no entity with those labels matched: check the labels with get_ontology"
    return result


# -- explore_relationships -------------------------------------------------------------------


class ExplorationResult(ToolResult):
    entity: str
    nodes: list[EntityItem] = Field(default_factory=list)
    edges: list[RelationItem] = Field(default_factory=list)
    passages: list[PassageItem] = Field(default_factory=list, description="passages naming the code symbol")
    truncated: bool = False
    truncated_by: list[str] = Field(default_factory=list)

    def sections(self) -> list[Section]:
        return [
            Section("Entities", [entity_line(e, with_id=True) for e in self.nodes]),
            Section("Relations", [relation_line(r) for r in self.edges], 2.0),
            passages_section(self.passages, "Mentioned in", PASSAGE_LINE_CHARS),
        ]


@TOOLS.tool(
    "explore_relationships",
    ExploreInput,
    "The relations around one entity (its id, evidence number or exact name), depth 1-2, optionally only "
    "some relation types, bounded by max_nodes and max_edges; says when the bounds cut the neighbourhood. "
    f"For a code symbol ({', '.join(SYMBOL_KINDS)}, from search_entities or retrieve) they are its code "
    f"edges ({', '.join(SYMBOL_LINK_TYPES)}), with the passages naming it.",
)
async def explore_relationships(tk: Toolkit, args: ExploreInput) -> ExplorationResult:
    ref = tk.resolve(args.entity, "entity").id  # an id or an exact name: the knowledge base tells them apart
    walk = await tk.kb.explore_relationships(
        ref,
        depth=args.depth,
        relation_types=args.relation_types,
        max_nodes=args.max_nodes,
        max_edges=args.max_edges,
    )
    result = ExplorationResult(
        entity=str(EvidenceId("entity", walk.entity)),
        nodes=walk.nodes,
        edges=walk.edges,
        passages=walk.passages,
        truncated=bool(walk.truncated_by),
        truncated_by=walk.truncated_by,
    )
    tk.ledger.cite("explore_relationships", result.nodes)
    tk.ledger.cite("explore_relationships", result.edges)
    tk.ledger.cite("explore_relationships", result.passages)
    if result.truncated:
        result.hint = f"cut by {' and '.join(walk.truncated_by)}: raise them or filter relation_types"
    elif not result.edges:
        result.hint = "no relations" + (" of those types" if args.relation_types else "") + " around this entity"
        if args.relation_types and kind_of(walk.entity) is not None:
            result.hint += f" (a code symbol's are {', '.join(SYMBOL_LINK_TYPES)})"
    return result


# -- search_themes ---------------------------------------------------------------------------


class ThemeSearchResult(ToolResult):
    query: str
    themes: list[ThemeItem] = Field(default_factory=list)
    index_state: str = "ready"

    def sections(self) -> list[Section]:
        passages = [p for t in self.themes for p in t.passages]
        return [
            Section("Themes", [theme_line(t) for t in self.themes]),
            passages_section(passages, line_cap=PASSAGE_LINE_CHARS),
        ]


@TOOLS.tool(
    "search_themes",
    SearchThemesInput,
    "Themes: clusters of related entities found by community detection at finalize, ranked for the query "
    "by the passages and names that match it; each with member names and supporting passages. Use it for "
    "broad questions (what are the main topics, which groups exist).",
)
async def search_themes(tk: Toolkit, args: SearchThemesInput) -> ThemeSearchResult:
    found = await tk.kb.search_themes(args.query, limit=args.limit, support_limit=args.support_limit)
    result = ThemeSearchResult(query=args.query, themes=found.themes, index_state=found.index_state)
    for theme in result.themes:
        tk.ledger.cite("search_themes", [theme])
        tk.ledger.cite("search_themes", theme.passages)
    if found.index_state == "missing":
        result.hint = "no themes yet: run finalize after ingesting (themes need relations between entities)"
    elif not result.themes:
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


def _cypher_description(tk: Toolkit) -> str:
    """The time limit said is the one that applies: the engine's, or the operator's read deadline if sooner."""
    seconds = min(CYPHER_TIMEOUT_MS / 1000, tk.limits.read_deadline_seconds)
    return (
        "Read-only Cypher over the graph (one statement; MATCH ... RETURN), run in a read-only transaction with "
        f"a row limit and a {seconds:g} s time limit. Call get_ontology first for table and "
        "property names. For code ingested with ingest_code it answers structural questions in one query "
        f"(e.g. {CODE_QUERIES[0][0]}: {CODE_QUERIES[0][1]}). Errors come back with a hint."
    )


@TOOLS.tool("cypher_query", CypherInput, _cypher_description)
async def cypher_query(tk: Toolkit, args: CypherInput) -> CypherResult:
    # The store guards the query (one read statement, allow-listed functions and procedures, the
    # engine's plan checked, rows and sizes bounded); refusals and engine errors carry a hint.
    found = await tk.kb.cypher_query(args.query, args.params, limit=args.limit)
    return CypherResult(columns=found.columns, rows=found.rows, truncated=found.truncated)
