"""The input model of every tool: one definition gives validation, bounds and the JSON Schema.

Every model is a `StrictInput`: unknown fields are refused and text that is not valid Unicode
is refused for every field at once. Inputs that are not only a tool's (`RetrieveInput`) are
defined where their operation lives and used here as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from evigraph.evidence.ids import EvidenceRef
from evigraph.ingest.chunking import ChunkerName
from evigraph.ingest.extraction import ExtractorName
from evigraph.ingest.graph_resolution import GraphResolverName
from evigraph.ingest.resolution import ResolverName
from evigraph.limits import Bounded, FetchChars, Hits
from evigraph.property_types import MAX_PROPERTIES, PropertyType, PropertyValue
from evigraph.retrieval.navigation import Relation
from evigraph.retrieval.passages import SearchMode
from evigraph.strict import StrictInput

Mode = SearchMode
Query = Annotated[str, Field(min_length=1, max_length=1000)]

RESERVED_LABELS = frozenset(
    {"Chunk", "Document", "Unknown", "Entity", "Theme", "SourceLog", "EvigraphMeta"}
    | {"PART_OF", "NEXT", "MENTIONED_IN", "RELATES"}
)
_LABEL = re.compile(r"^[\w\- ]+$", re.UNICODE)


def check_label(label: str) -> str:
    """Labels become part of the schema and of queries, so only plain names are allowed."""
    if not label or label != label.strip():
        raise ValueError(f"label {label!r} is empty or has leading/trailing spaces")
    if len(label) > 64:
        raise ValueError(f"label {label[:20]!r}… is over 64 characters")
    if not _LABEL.match(label):
        raise ValueError(
            f"label {label!r} has characters a label may not hold; use letters, digits, spaces, '-' and '_' "
            "(no '|', ':', backticks or line breaks)"
        )
    if label.startswith("__") and label.endswith("__"):
        raise ValueError(f"label {label!r}: names of the form __X__ are reserved")
    if label in RESERVED_LABELS:
        raise ValueError(f"label {label!r} is one of evigraph's own; choose another name")
    return label


class ToolInput(StrictInput):
    """The base of the input models that only a tool takes."""


class NoInput(ToolInput):
    pass


class FinalizeInput(ToolInput):
    resolver: GraphResolverName | None = Field(
        None,
        description="how to merge entities of the whole graph that are one thing (default: exact, nothing "
        "beyond ingest's exact match); only those the operator allows",
    )


class SearchPassagesInput(ToolInput):
    query: Query = Field(description="plain words; query syntax has no effect")
    mode: Mode = Field("hybrid", description="lexical (BM25), semantic (vectors) or hybrid (both, fused)")
    limit: Hits = 10


class ReadPassagesInput(ToolInput):
    passages: Annotated[list[EvidenceRef], Bounded("max_fetch_ids", items=True)] = Field(
        min_length=1, description="evidence numbers or ids"
    )
    max_chars: FetchChars = Field(4000, description="most characters of text per passage")


class NavigateInput(ToolInput):
    passage: EvidenceRef = Field(description="the passage to start from: its number or evidence id")
    relation: Relation = Field(
        description="parent (the section's first passage), children (passages under this heading), siblings "
        "(same section), previous, next, table_context (the passages around a table)"
    )
    limit: Hits = 10
    max_chars: FetchChars = Field(12000, description="total characters of text returned")


class SearchEntitiesInput(ToolInput):
    query: Query
    labels: list[str] | None = Field(None, max_length=20, description="only entities with these labels")
    mode: Mode = "hybrid"
    limit: Hits = 10


class ExploreInput(ToolInput):
    entity: EvidenceRef = Field(
        description="an entity or code symbol id (from search_entities or retrieve), its evidence number, "
        "or its exact name"
    )
    depth: int = Field(1, ge=1, le=2)
    relation_types: list[str] | None = Field(None, max_length=20)
    max_nodes: int = Field(25, ge=1, le=200)
    max_edges: int = Field(50, ge=1, le=200)


class SearchThemesInput(ToolInput):
    query: Query
    limit: Annotated[int, Field(ge=1), Bounded("max_hits", ceiling=10)] = 5
    support_limit: int = Field(3, ge=1, le=10, description="most passages listed per theme")


class CypherInput(ToolInput):
    query: str = Field(min_length=1, max_length=10000, description="read-only Cypher")
    params: dict[str, Any] = Field(default_factory=dict, description="query parameters ($name)")
    limit: int = Field(100, ge=1, le=1000, description="most rows returned")


class GetContextInput(ToolInput):
    evidence: list[int] = Field(min_length=1, max_length=200, description="evidence numbers to pack")
    max_tokens: int = Field(2000, ge=50, le=32000)


class SourceStatusInput(ToolInput):
    document_key: str = Field(
        min_length=1,
        max_length=4000,
        description="a document key: 'file:' + its root folder's name + its path (e.g. 'file:notes/a.md'), "
        "or a text's key",
    )


class CitationsInput(ToolInput):
    """What check_citations and render_citations take: a draft's `[n]`, evidence cited directly
    (numbers or evidence ids, as a decision or a report outside a draft cites them), or both."""

    answer: str | None = Field(None, min_length=1, max_length=100_000, description="a draft answer with [n] citations")
    evidence: Annotated[list[EvidenceRef], Bounded("max_fetch_ids", items=True)] = Field(
        default_factory=list,
        description="evidence numbers or evidence ids cited (besides the answer's [n]), each given a verdict",
    )
    strict: bool = Field(
        False, description="only passages read whole by read_passages in this session are citable, not snippets"
    )

    @model_validator(mode="after")
    def _something_cited(self) -> CitationsInput:
        if self.answer is None and not self.evidence:
            raise ValueError("give the answer whose [n] to take, or the evidence (numbers or ids) cited, or both")
        return self


# -- write tools -----------------------------------------------------------------------------


def named_properties(properties: Sequence[PropertyType | str]) -> list[PropertyType]:
    """A bare name declares a string property, checked as a declared one is (not dropped, as a stored
    ontology's old names are). The inputs' validator; the tool applies it again for the type checker."""
    return [PropertyType(name=p) if isinstance(p, str) else p for p in properties]


class EntityTypeInput(ToolInput):
    label: str
    description: str = Field("", max_length=2000)
    properties: list[PropertyType | str] = Field(
        default_factory=list,
        max_length=MAX_PROPERTIES,
        description="properties an entity of this type may hold: [{name, type, description}]; a bare name is a "
        "string property",
    )

    _label = field_validator("label")(check_label)
    _named = field_validator("properties")(named_properties)


class RelationTypeInput(ToolInput):
    label: str = Field(description="relation type, e.g. WORKS_FOR")
    description: str = Field("", max_length=2000)
    patterns: list[tuple[str, str]] = Field(
        default_factory=list, max_length=100, description="allowed [source label, target label] pairs"
    )
    properties: list[PropertyType | str] = Field(
        default_factory=list,
        max_length=MAX_PROPERTIES,
        description="properties a relation of this type may hold: [{name, type, description}]; a bare name is a "
        "string property",
    )

    _label = field_validator("label")(check_label)
    _named = field_validator("properties")(named_properties)


class SetOntologyInput(ToolInput):
    entities: list[EntityTypeInput] = Field(default_factory=list, max_length=200)
    relations: list[RelationTypeInput] = Field(default_factory=list, max_length=200)


class PlanRule(ToolInput):
    match: str = Field("*", min_length=1, max_length=500, description="glob on the file's path under the root")
    chunker: ChunkerName | None = Field(None, description="how passages are cut; costs are in the tool description")
    extractor: ExtractorName | None = Field(None, description="how entities are found; costs as above")
    resolver: ResolverName | None = Field(None, description="how duplicate entities are merged")


class IngestInput(ToolInput):
    text: str | None = Field(None, max_length=5_000_000, description="text to ingest under document_key")
    document_key: str | None = Field(None, min_length=1, max_length=500, description="the text's key, e.g. 'notes/x'")
    title: str | None = Field(None, max_length=500)
    files: list[str] | None = Field(
        None, min_length=1, max_length=50, description="paths or globs under files_root, or document keys of files"
    )
    plan: list[PlanRule] | None = Field(None, max_length=20, description="rules; the first matching a file applies")
    reextract: bool = Field(False, description="extract unchanged documents again (after set_ontology)")
    max_llm_tokens: int | None = Field(
        None,
        ge=0,
        description="LLM token ceiling of this call (input + output), at most the operator's; finished documents "
        "are kept, the rest listed in `left`",
    )


class IngestCodeInput(ToolInput):
    paths: list[str] = Field(
        min_length=1,
        max_length=50,
        description="folders or source files under files_root (a repository or part of one)",
    )
    calls: bool = Field(True, description="resolve CALLS edges; false is faster and keeps imports and inheritance")
    max_file_kb: int = Field(1024, ge=1, le=51_200, description="skip (and report) source files larger than this")


class PreviewFilesInput(ToolInput):
    offset: int = Field(0, ge=0, description="next_offset from the previous page")


class EntityInput(ToolInput):
    name: str = Field(min_length=1, max_length=500)
    label: str
    description: str = Field("", max_length=4000)
    aliases: list[str] = Field(default_factory=list, max_length=20)
    properties: dict[str, PropertyValue] = Field(
        default_factory=dict,
        max_length=MAX_PROPERTIES,
        description="values of properties its label declares (get_ontology lists them); null removes one",
    )

    _label = field_validator("label")(check_label)


class UpsertEntitiesInput(ToolInput):
    entities: list[EntityInput] = Field(min_length=1, max_length=100)


class EntityRefInput(ToolInput):
    name: str = Field(min_length=1, max_length=500)
    label: str

    _label = field_validator("label")(check_label)


class RelationInput(ToolInput):
    source: EntityRefInput
    type: str
    target: EntityRefInput
    fact: str = Field(min_length=1, max_length=4000, description="the statement, in one sentence")
    evidence: list[EvidenceRef] = Field(default_factory=list, max_length=20, description="supporting passages")
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    properties: dict[str, PropertyValue] = Field(
        default_factory=dict,
        max_length=MAX_PROPERTIES,
        description="values of properties its type declares (get_ontology lists them); null removes one",
    )

    _type = field_validator("type")(check_label)


class UpsertRelationsInput(ToolInput):
    relations: list[RelationInput] = Field(min_length=1, max_length=100)


class DeleteDocumentInput(ToolInput):
    document_key: str = Field(min_length=1, max_length=4000, description="the key of the document to remove")
