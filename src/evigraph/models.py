"""Pydantic models shared by every layer.

Everything that crosses a layer boundary is one of these, so a strategy written by a user, the
store and the CLI all agree on one shape. Models are frozen where sharing them between threads or
caching them must be safe.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from evigraph.property_types import Owner, PropertyType, legacy_properties
from evigraph.resolution_records import IngestResolution

UNKNOWN_LABEL = "Unknown"
"""Label of an entity whose type matches no ontology label."""

DEFAULT_RELATION_TYPE = "RELATED_TO"
"""Relation type of a co-occurrence relation: two entities named in one sentence."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# -- Loading and chunking ----------------------------------------------------------------------


class Element(_Frozen):
    """One structural block of a document (a heading, paragraph, table, list or code block).

    Loaders that understand structure emit elements so that structural chunking can keep a
    section together and give each chunk its heading breadcrumbs.
    """

    kind: str = Field(description="heading, paragraph, table, list, code or text")
    text: str
    level: int = Field(0, description="heading depth (1 = top); 0 for non-headings")
    start: int = Field(description="character offset of the block in the document text")
    end: int
    page: int | None = None


class LoadedDocument(_Frozen):
    """What a loader returns: the text of one document, with its identity and structure."""

    key: str = Field(description="stable identity of the document in the knowledge base")
    title: str
    path: str | None = Field(None, description="file the document was read from, if any")
    text: str
    loader: str = Field(description="name of the loader that produced it")
    elements: tuple[Element, ...] | None = Field(None, description="structure, when the loader sees it")
    pages: tuple[tuple[int, int], ...] | None = Field(
        None, description="(page number, start offset) for each page, in order, for paged formats"
    )
    metadata: dict[str, str] = Field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """Hash of what ingestion depends on, so an unchanged document costs nothing to re-ingest."""
        h = hashlib.sha256()
        for part in (self.title, self.text):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return h.hexdigest()

    def page_at(self, offset: int) -> int | None:
        """Page number holding a character offset, or None for unpaged text."""
        if not self.pages:
            return None
        page = self.pages[0][0]
        for number, start in self.pages:
            if start > offset:
                break
            page = number
        return page


def embedding_text(title: str, text: str, context: str = "") -> str:
    """What a passage's vector is computed from: its document title, its context, then its text.

    A passage often never names its subject ("He was born in 1915"); the title does, and a
    context a contextual chunker wrote says more. The text comes last, so a sentence's offsets
    in the passage are its offsets in this text shifted by one amount.
    """
    head = "\n".join(part for part in (title, context) if part)
    return f"{head}\n{text}" if head else text


class TextChunk(_Frozen):
    """A passage cut from a document by a chunking strategy."""

    index: int
    text: str
    start: int = Field(description="character offset of the chunk's first character in the document")
    end: int = Field(description="offset just past the chunk's last character")
    breadcrumbs: tuple[str, ...] = Field(default=(), description="heading path of the chunk's section")
    page: int | None = None
    context: str = Field(
        default="",
        description="a sentence situating the chunk in its document (`ContextualChunking`): searched and embedded "
        "with the chunk, never shown as its text, so citations and offsets stay the document's own words",
    )


# -- Ontology ----------------------------------------------------------------------------------


class EntityType(_Frozen):
    label: str
    description: str = ""
    properties: tuple[PropertyType, ...] = Field(default=(), description="what an entity of this type may hold")

    _legacy = field_validator("properties", mode="before")(legacy_properties)


class RelationType(_Frozen):
    type: str
    description: str = ""
    patterns: tuple[tuple[str, str], ...] = Field(
        default=(), description="allowed (source label, target label) pairs; empty = any"
    )
    properties: tuple[PropertyType, ...] = Field(default=(), description="what a relation of this type may hold")

    _legacy = field_validator("properties", mode="before")(legacy_properties)


class Ontology(_Frozen):
    """The entity and relation types a knowledge base extracts; a user ontology replaces the default."""

    entities: tuple[EntityType, ...]
    relations: tuple[RelationType, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(e.label for e in self.entities)

    def has_label(self, label: str) -> bool:
        return any(e.label == label for e in self.entities)

    def declared_properties(self, owner: Owner) -> dict[str, tuple[PropertyType, ...]]:
        """Entity label (or relation type) -> the properties it declares."""
        if owner == "entity":
            return {e.label: e.properties for e in self.entities}
        return {r.type: r.properties for r in self.relations}

    def property_names(self, owner: Owner) -> set[str]:
        """Every property name the entity (relation) types declare: one column each."""
        return {p.name for props in self.declared_properties(owner).values() for p in props}


# -- Extraction output -------------------------------------------------------------------------


_EDGE = " \t\"'`.,;:!?()[]{}"
"""What may surround a name without being part of it."""


@functools.lru_cache(maxsize=1 << 16)
def normalize_name(name: str) -> str:
    """Normalise a surface form so spelling variants of one name compare equal.

    Case, Unicode forms, surrounding punctuation, a leading article and runs of white space do
    not make a different entity. Memoised: asked 112,000 times for 3,000 passages' extraction."""
    text = unicodedata.normalize("NFKC", name).casefold().strip()
    text = re.sub(r"\s+", " ", text)
    text = text.strip(_EDGE)
    text = re.sub(r"^(the|a|an) ", "", text)
    # Again after the possessive goes: "Sam Katzman ’s" left "sam katzman " with a trailing space,
    # an id FalkorDB's range index then never finds (it matched 0 of 1 by equality).
    return re.sub(r"['’]s$", "", text).strip(_EDGE)


def entity_id(name: str, label: str) -> str:
    """Entity identity: the normalised name qualified by its label (Paris the city is not Paris the person)."""
    return f"{label.casefold()}:{normalize_name(name)}"


class Span(_Frozen):
    start: int
    end: int


class Mention(_Frozen):
    """An entity named in a chunk, with where (character spans within the chunk text)."""

    entity_id: str
    chunk_index: int
    spans: tuple[Span, ...] = ()


class ExtractedEntity(_Frozen):
    id: str
    name: str
    label: str
    descriptions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @classmethod
    def create(cls, name: str, label: str, description: str = "") -> ExtractedEntity:
        clean = re.sub(r"\s+", " ", name).strip()
        return cls(
            id=entity_id(clean, label),
            name=clean,
            label=label,
            descriptions=(description,) if description else (),
            aliases=(clean,),
        )

    @property
    def description(self) -> str:
        return " | ".join(self.descriptions)


class ExtractedRelation(_Frozen):
    source: str = Field(description="entity id")
    target: str = Field(description="entity id")
    type: str = DEFAULT_RELATION_TYPE
    fact: str = Field(description="the sentence stating the relation")
    confidence: float = Field(ge=0.0, le=1.0)
    chunk_indexes: tuple[int, ...] = Field(description="chunks of this document that state it")

    @functools.cached_property
    def id(self) -> str:
        """Stable identity: one relation per (endpoints, type, fact), wherever it is stated.

        Kept once computed: extraction, resolution and the write each ask for it, and hashing it
        afresh every time was 5% of a 100,000-passage ingest's Python time. Equality, hashing and
        dumps see fields only, and `model_copy` drops the kept value when it changes a field.
        """
        fact = " ".join(self.fact.split()).casefold()
        raw = "\x1f".join((self.source, self.target, self.type, fact))
        return hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:24]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied.__dict__.pop("id", None)
        return copied


class GraphData(_Frozen):
    """What extraction returns for the chunks of one document, and what resolution refines."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    mentions: tuple[Mention, ...] = ()
    found: tuple[str, ...] = Field(
        default=(),
        description="per chunk, the names an offline extractor found before typing (`found_hits`), so "
        "finalize can type them again from the whole knowledge base; empty where typing is not redone",
    )


# -- What is written, and what the user is told ------------------------------------------------


class DocumentVersion(_Frozen):
    """One document, fully processed, ready to replace its previous version in one step."""

    key: str
    title: str
    path: str | None
    content_hash: str
    loader: str
    metadata: dict[str, str] = Field(default_factory=dict)
    chunks: tuple[TextChunk, ...]
    graph: GraphData
    embeddings: tuple[tuple[float, ...], ...] | None = Field(
        default=None, description="one vector per chunk, when an embedder is set"
    )
    sentences: tuple[tuple[Span, ...], ...] = Field(
        default=(), description="per chunk, the bridge sentences graph ranking embeds (ingest/bridges.py)"
    )
    sentence_embeddings: tuple[tuple[tuple[float, ...], ...], ...] | None = Field(
        default=None, description="per chunk, one vector per bridge sentence, when an embedder is set"
    )
    name_embeddings: dict[str, tuple[float, ...]] | None = Field(
        default=None,
        description="vectors of the graph's entity names, by name, when an embedder is set: an entity the "
        "write creates gets its name's vector with it (names of entities stored already may be left out)",
    )
    found: tuple[str, ...] = Field(
        default=(), description="per chunk, the extractor's untyped names (`GraphData.found`), kept for finalize"
    )

    def stored(self, version: int) -> StoredDocument:
        """What a write reports of this version once stored under number `version`."""
        return StoredDocument(
            key=self.key,
            title=self.title,
            path=self.path,
            content_hash=self.content_hash,
            version=version,
            loader=self.loader,
            chunks=len(self.chunks),
        )


class StoredDocument(_Frozen):
    key: str
    title: str
    path: str | None
    content_hash: str
    version: int
    loader: str
    chunks: int


class PatternExample(BaseModel):
    relation: str
    source_label: str
    target_label: str
    fact: str = Field(description="one dropped fact with this pattern")
    count: int = 1


class PruneReport(BaseModel):
    """What the ontology did not let through, summed over an ingest."""

    entity_types: dict[str, int] = Field(default_factory=dict, description="undeclared entity labels dropped")
    relation_types: dict[str, int] = Field(default_factory=dict, description="undeclared relation types dropped")
    pattern_examples: list[PatternExample] = Field(
        default_factory=list, description="relations dropped for an undeclared (source, target) pattern"
    )
    unknown_endpoints: int = Field(0, description="relations dropped because an end is an Unknown entity")
    unknown_entities: int = Field(0, description="entities stored with the label Unknown")

    @property
    def empty(self) -> bool:
        return not (
            self.entity_types
            or self.relation_types
            or self.pattern_examples
            or self.unknown_endpoints
            or self.unknown_entities
        )

    def merge(self, other: PruneReport) -> None:
        for label, n in other.entity_types.items():
            self.entity_types[label] = self.entity_types.get(label, 0) + n
        for rtype, n in other.relation_types.items():
            self.relation_types[rtype] = self.relation_types.get(rtype, 0) + n
        known = {(p.relation, p.source_label, p.target_label): p for p in self.pattern_examples}
        for p in other.pattern_examples:
            mine = known.get((p.relation, p.source_label, p.target_label))
            if mine is None:
                self.pattern_examples.append(p.model_copy())
            else:
                mine.count += p.count
        self.unknown_endpoints += other.unknown_endpoints
        self.unknown_entities += other.unknown_entities


class IngestStatus(StrEnum):
    created = "created"
    updated = "updated"
    unchanged = "unchanged"
    failed = "failed"


class DocumentOutcome(BaseModel):
    key: str
    status: IngestStatus
    error: str | None = None
    path: str | None = None
    chunks: int = 0
    entities: int = 0
    relations: int = 0
    content_hash: str | None = Field(None, description="of the stored version (written or unchanged documents)")
    version: int = 0
    line: int | None = Field(None, description="for a record of a many-record file (JSONL), its line")


_SUMMED_SPEND = (
    "calls",
    "failed_calls",
    "input_tokens",
    "output_tokens",
    "estimated_calls",
    "passages",
    "cached_passages",
    "contexts",
    "cached_contexts",
    "unaligned_entities",
    "dangling_relations",
)


class LLMSpend(BaseModel):
    """LLM calls and tokens spent building the graph, and the passages extraction covered.

    An ingest report holds one ingest's (a finalize report its resolution's); `status` the knowledge
    base's running total, so the cost of a graph stays visible across sessions. Cached passages
    cost no call and count apart.
    """

    calls: int = Field(0, description="calls sent, failed ones included")
    failed_calls: int = Field(0, description="calls refused, timed out or answered with JSON that did not fit")
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_calls: int = Field(0, description="calls whose server reported no usage, counted with a tokenizer")
    passages: int = Field(0, description="passages sent to the LLM")
    cached_passages: int = Field(0, description="passages whose extraction was reused from the cache: no call")
    contexts: int = Field(0, description="passages sent to the LLM for a context (`--chunker contextual`)")
    cached_contexts: int = Field(0, description="passages whose context was reused from the cache: no call")
    unaligned_entities: int = Field(0, description="entities dropped: the LLM named them, the passage does not")
    dangling_relations: int = Field(0, description="relations dropped: an end is no entity found in the passage")
    max_tokens: int | None = Field(None, description="the ceiling this ingest ran under (None: none)")
    ceiling_reached: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens_per_passage(self) -> float:
        """Input and output tokens per passage sent, the figure to compare extraction costs by.

        A passage sent for its context and for extraction is one passage, whose cost is both calls'.
        """
        sent = self.sent_passages
        return round((self.input_tokens + self.output_tokens) / sent, 1) if sent else 0.0

    @property
    def sent_passages(self) -> int:
        return max(self.passages, self.contexts)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: LLMSpend) -> LLMSpend:
        summed: dict[str, Any] = {k: getattr(self, k) + getattr(other, k) for k in _SUMMED_SPEND}
        summed["max_tokens"] = self.max_tokens if other.max_tokens is None else other.max_tokens
        summed["ceiling_reached"] = self.ceiling_reached or other.ceiling_reached
        return LLMSpend(**summed)


class IngestReport(BaseModel):
    documents: list[DocumentOutcome] = Field(default_factory=list)
    pruned: PruneReport = Field(default_factory=lambda: PruneReport())
    llm: LLMSpend | None = Field(
        None, description="what LLM extraction, passage contexts and resolution spent; None when no LLM was asked"
    )
    resolution: IngestResolution | None = Field(None, description="what resolving new names against the graph did")
    left: list[str] = Field(
        default_factory=list,
        description="keys of documents not ingested because the LLM token ceiling was reached; run again for them",
    )
    skipped: dict[str, int] = Field(
        default_factory=dict,
        description="files that folders and globs held but no loader reads, by extension ('.py'; '' for none), "
        "most first; named one by one they are read as text",
    )
    excluded: int = Field(0, description="files the include/exclude globs left out (not counted in `skipped`)")
    roots_moved: dict[str, str] = Field(
        default_factory=dict,
        description="roots this ingest re-pointed (their folder moved, or --root named them): name -> new folder",
    )
    renamed: int = Field(0, description="documents whose absolute-path key was renamed to its root's form")

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    @property
    def failed(self) -> list[DocumentOutcome]:
        return [d for d in self.documents if d.status == IngestStatus.failed]

    @property
    def ok(self) -> bool:
        return not self.failed

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in IngestStatus}
        for d in self.documents:
            out[d.status.value] += 1
        return out


class StoreCounts(BaseModel):
    documents: int
    chunks: int
    entities: int
    relations: int
    mentions: int = 0
    labels: dict[str, int] = Field(default_factory=dict)
    relation_types: dict[str, int] = Field(default_factory=dict)
    code: dict[str, int] = Field(
        default_factory=dict, description="nodes per code table (Repo, Module, Class, Function); empty without code"
    )


class PassageHit(BaseModel):
    """A passage found by a search, with where it came from."""

    id: str
    document: str
    title: str
    path: str | None
    index: int
    text: str
    score: float
    version: int = Field(0, description="the version of its document the passage belongs to")
    page: int | None = None
    start: int = 0
    end: int = 0
    breadcrumbs: list[str] = Field(default_factory=list)
    context: str = Field("", exclude=True, description="what search read beside the text (`TextChunk.context`)")


class EntityHit(BaseModel):
    id: str
    name: str
    label: str
    description: str = ""
    score: float = 0.0


class Neighbour(BaseModel):
    id: str = ""
    source: str
    source_name: str
    type: str
    fact: str
    target: str
    target_name: str
    confidence: float
    hop: int
    source_passages: list[str] = Field(default_factory=list)


# -- Bookkeeping the toolkit reads: source history, themes, schema -----------------------------


class SourceState(StrEnum):
    current = "current"
    pending = "pending"
    failed = "failed"
    deleted = "deleted"
    unknown = "unknown"


class SourceRecord(BaseModel):
    """The last thing that happened to a document key: written, failed or deleted."""

    key: str
    state: SourceState
    content_hash: str | None = None
    version: int = 0
    error: str | None = None
    at: str | None = Field(None, description="UTC time, ISO 8601")


class ThemeRecord(BaseModel):
    """A cluster of related entities found by community detection at finalize."""

    id: str
    members: list[str] = Field(description="entity ids, most connected first")
    names: list[str] = Field(description="member names, in the order of `members`")
    labels: list[str] = Field(description="member labels, in the order of `members`")
    size: int


class WalkBounds(BaseModel):
    """How far `GraphStore.explore` walks from an entity and how much it returns: every read that
    explores passes one value instead of the same four arguments."""

    model_config = ConfigDict(frozen=True)

    depth: int = Field(1, ge=1)
    relation_types: tuple[str, ...] | None = None
    max_nodes: int = Field(25, ge=1)
    max_edges: int = Field(50, ge=1)


DEFAULT_WALK = WalkBounds()


class GraphWalk(BaseModel):
    """The relations around one entity, and which bound cut the walk short."""

    nodes: list[str]
    edges: list[Neighbour]
    truncated_by: list[str] = Field(default_factory=list, description="max_nodes and/or max_edges")


class TableInfo(BaseModel):
    name: str
    kind: str = Field(description="node or relationship")
    properties: dict[str, str] = Field(description="property name -> type")
    rows: int = 0
    sample_keys: list[str] = Field(default_factory=list)
    connects: list[tuple[str, str]] = Field(default_factory=list, description="(from, to) node tables")
