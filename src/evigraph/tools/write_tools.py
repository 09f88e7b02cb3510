"""Write tools: shaping the ontology, ingesting text and files, finalizing, and agent-recorded knowledge.

None of them is offered by a read-only toolkit. Each stands on the knowledge base: the tools
validate an agent's arguments, choose its per-file plans within the operator's limits, and shape
what the knowledge base did into a reply. Files are read by the knowledge base through
`FilesRoot`, which refuses every path leading outside the root. A file's document key is
`file:` + its root's name + its path under the root, as on the command line, so a file is one
document however it was ingested and wherever its folder is mounted; text can never take such a
key, nor overwrite a document read from a file, so an agent
cannot forge a file's content.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from evigraph.display import display_name, display_text
from evigraph.errors import EvigraphError, ToolError
from evigraph.evidence.pack import Section
from evigraph.ingest.files_root import MAX_WALK_ENTRIES, FileSample, FilesRoot
from evigraph.ingest.ontology_merge import OntologyExtension
from evigraph.ingest.roots import keyed_by
from evigraph.ingest.sources import FILE_KEY_PREFIX, describe_extensions, walk_files
from evigraph.ingest.text_documents import text_document
from evigraph.kb.writes import FilePlan
from evigraph.models import (
    EntityType,
    ExtractedEntity,
    ExtractedRelation,
    IngestReport,
    IngestStatus,
    LLMSpend,
    PruneReport,
    RelationType,
    entity_id,
)
from evigraph.property_types import MAX_PROPERTIES
from evigraph.resolution_records import IngestResolution
from evigraph.surrogates import escaped
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.inputs import (
    DeleteDocumentInput,
    FinalizeInput,
    IngestInput,
    PreviewFilesInput,
    SetOntologyInput,
    UpsertEntitiesInput,
    UpsertRelationsInput,
    named_properties,
)
from evigraph.tools.plans import KB_DEFAULT, allowed_finalize_resolver, choose_plan, describe_options, llm_ceiling
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()
AGENT_SOURCE = "agent"


# -- set_ontology ----------------------------------------------------------------------------


class OntologyChange(OntologyExtension, ToolResult):
    """What `set_ontology` changed, as the knowledge base reports it."""

    def header(self) -> str:
        parts = [
            f"entity types added: {', '.join(self.added_entity_types) or 'none'}",
            f"relation types added: {', '.join(self.added_relation_types) or 'none'}",
            f"patterns added: {', '.join(f'{r} {a}->{b}' for r, a, b in self.added_patterns) or 'none'}",
        ]
        if self.added_properties:
            parts.append(f"properties added: {', '.join(self.added_properties)}")
        if self.unrestricted:
            parts.append(f"already allowing every pair, patterns not added: {', '.join(self.unrestricted)}")
        if self.replaced_default:
            parts.append("the default ontology was replaced (nothing was ingested yet)")
        return "; ".join(parts)


@TOOLS.tool(
    "set_ontology",
    SetOntologyInput,
    "Declare or extend the entity and relation types extraction uses. Only adds: new types, descriptions, "
    "relation patterns [[source label, target label], ...] and properties [{name, type, description}] "
    f"(type: string, integer, number, boolean, date 'YYYY-MM-DD' or string_list; at most {MAX_PROPERTIES} a type; "
    "a declared property keeps its type; upsert_entities / upsert_relations set values, Cypher reads them as "
    "e.name). Labels: letters (any script), digits, spaces, '-' and '_'. Declaring before the first ingest keeps "
    "the default types out. Documents already ingested keep their old extraction until ingest(..., reextract=true).",
    write=True,
    destructive=True,
)
async def set_ontology(tk: Toolkit, args: SetOntologyInput) -> OntologyChange:
    if not args.entities and not args.relations:
        raise ToolError("nothing to declare", hint="pass entities=[{label: ...}] and/or relations=[{label: ...}]")
    extension = await tk.kb.extend_ontology(
        [
            EntityType(label=e.label, description=e.description, properties=tuple(named_properties(e.properties)))
            for e in args.entities
        ],
        [
            RelationType(
                type=r.label,
                description=r.description,
                patterns=tuple(tuple(p) for p in r.patterns),
                properties=tuple(named_properties(r.properties)),
            )
            for r in args.relations
        ],
    )
    change = OntologyChange.model_validate(extension.model_dump())
    if extension.added:
        change.hint = "new documents use it now; re-extract ingested ones with ingest(..., reextract=true)"
    return change


# -- ingest ----------------------------------------------------------------------------------


class IngestedDocument(BaseModel):
    document_key: str
    path: str | None = Field(None, description="for a file, its path under the files root")
    status: str = Field(description="ingested, reextracted, updated, unchanged or failed")
    plan: dict[str, str] | None = None
    plan_reason: str | None = None
    error: str | None = None
    passages: int = 0
    entities: int = 0
    relations: int = 0


class IngestResult(ToolResult):
    documents: list[IngestedDocument] = Field(default_factory=list)
    pruned: PruneReport = Field(default_factory=PruneReport)
    llm: LLMSpend | None = Field(
        None, description="what LLM work (extraction, passage contexts) spent in this call (None: no LLM used)"
    )
    left: list[str] = Field(
        default_factory=list, description="documents not ingested: the LLM token ceiling was reached; call again"
    )
    resolution: IngestResolution | None = Field(
        None, description="new names an llm_verified plan mapped onto existing entities, and what it left undecided"
    )
    finalized: bool | None = Field(None, description="whether an on_write finalize ran (None: not due)")
    skipped: dict[str, int] = Field(
        default_factory=dict,
        description="files in the folders named that no loader reads, by extension; name one to read it as text",
    )

    def header(self) -> str:
        counts: dict[str, int] = {}
        for d in self.documents:
            counts[d.status] = counts.get(d.status, 0) + 1
        text = "ingest: " + ", ".join(f"{k} {v}" for k, v in counts.items())
        if self.skipped:
            total = sum(self.skipped.values())
            types = display_text(describe_extensions(self.skipped))
            files = "file" if total == 1 else "files"
            text += f"; skipped {total} {files} no loader reads: {types} (name such a file to read it as text)"
        if self.llm is not None:
            text += f"; LLM {self.llm.calls} calls, {self.llm.total_tokens:,} tokens"
        if self.left:
            text += f"; {len(self.left)} left at the LLM token ceiling"
        if self.resolution is not None:
            text += f"; resolved with {self.resolution.line()}"
        return text

    def sections(self) -> list[Section]:
        docs = [
            f"{display_name(d.document_key)}: {d.status}"
            + (f" ({d.passages} passages, {d.entities} entities, {d.relations} relations)" if d.passages else "")
            + (f"; plan {d.plan}" if d.plan else "")
            + (f"; {d.plan_reason}" if d.plan_reason else "")
            + (f"; error: {display_text(d.error)}" if d.error else "")
            for d in self.documents
        ]
        pruned = [] if self.pruned.empty else [self.pruned.model_dump_json(exclude_defaults=True)]
        left = [display_name(key) for key in self.left]
        return [Section("Documents", docs, 2.0), Section("Pruned by the ontology", pruned), Section("Left", left)]


def _ingest_description(tk: Toolkit) -> str:
    text = (
        "Add a text (text + document_key) or re-extract one (reextract=true). Unchanged documents are skipped; "
        "a changed one replaces its old version. The result reports what the ontology missed (pruned) with "
        "the set_ontology call that keeps it."
    )
    if tk.files_root is not None:
        text += (
            " With files: paths or globs under the files root (at most 50 per call; a file's document_key is "
            "'file:' + the files root's name + the path under it, and files= accepts it too), and plan: rules "
            "{match, chunker, extractor, resolver}, the first matching a file's path applies. "
            "Allowed options and their cost:\n" + describe_options(tk.shared.plan_limits)
        )
    return text


@TOOLS.tool("ingest", IngestInput, _ingest_description, write=True, destructive=True, idempotent=True)
async def ingest(tk: Toolkit, args: IngestInput) -> IngestResult:
    if args.files is not None:
        if args.text is not None or args.document_key is not None or args.title is not None:
            raise ToolError(
                "pass text or files, not both: files take their keys and titles from the files; "
                "text, document_key and title are for text",
                hint="make one call for files and another for text",
            )
        return await _ingest_files(tk, args)
    if args.plan is not None:
        raise ToolError("a plan applies to files only", hint="pass files=[...] with plan=, or drop plan for text")
    if args.text is None:
        raise ToolError(
            "nothing to ingest",
            hint="pass text= and document_key= (re-extracting a text needs its text too), or files= with a files root",
        )
    if not args.document_key:
        raise ToolError("text needs a document_key", hint="pass document_key='notes/meeting-3'")
    await _refuse_file_key(tk, args.document_key)
    doc = text_document(args.text, args.document_key, args.title)
    report = await tk.kb.ingest_documents(
        [doc],
        reextract=args.reextract,
        exclusive=None,
        progress=False,
        max_llm_tokens=llm_ceiling(args.max_llm_tokens, tk.shared.plan_limits),
        max_llm_pairs=tk.shared.plan_limits.max_llm_pairs,
    )
    return await _reply(tk, report, {}, reextract=args.reextract)


async def _refuse_file_key(tk: Toolkit, key: str) -> None:
    if key.startswith(FILE_KEY_PREFIX):
        raise ToolError(
            f"{key!r} is a file's key; text cannot be stored under it",
            hint="use ingest(files=[...]) for files, or another document_key for text",
        )
    stored = (await tk.kb.get_documents([key])).get(key)
    from_file = stored is not None and (stored.loader != "text" or stored.path not in (None, key))
    if tk.files_root is not None and not from_file:
        try:
            tk.files_root.relative(key)
            from_file = (tk.files_root.root / key).is_file()
        except (EvigraphError, OSError):  # OSError: a name too long to be a file (ENAMETOOLONG)
            pass
    if from_file:
        raise ToolError(
            f"{key!r} was read from a file; text cannot overwrite or extend it",
            hint="re-read the file with ingest(files=[...], reextract=true), or use another document_key",
        )


async def _ingest_files(tk: Toolkit, args: IngestInput) -> IngestResult:
    root = tk.files_root
    if root is None:
        raise ToolError(
            "this toolkit has no files root, so ingest takes text only", hint="pass text= and document_key="
        )
    with keyed_by(await tk.kb.root_for(root.root)):
        return await _ingest_under(tk, root, args)


async def _ingest_under(tk: Toolkit, root: FilesRoot, args: IngestInput) -> IngestResult:
    rels = await asyncio.to_thread(root.expand, args.files or [])
    plans: dict[str, FilePlan] = {}
    chosen: dict[str, tuple[dict[str, str], str | None]] = {}  # shown path -> plan, why it differs from asked
    keys = []
    for rel in rels:
        try:
            key: str | None = root.key(rel)
        except EvigraphError:  # changed since it was listed: the knowledge base's read reports it
            key = None
        reason: str | None
        if args.plan is None and args.reextract and key in tk.shared.plans:
            plan, reason = tk.shared.plans[key], "kept the plan of this file's last ingest"
        else:
            plan, reason = choose_plan(rel, args.plan, tk.shared.plan_limits)
            if args.plan is None and args.reextract:
                reason = "no plan remembered for this file (or none passed); used the defaults"
        plans[rel] = FilePlan(_chosen(plan["chunker"]), _chosen(plan["extractor"]), _chosen(plan["resolver"]))
        chosen[escaped(rel)] = (plan, reason)
        keys += [key] if key else []
    report = await tk.kb.ingest_files(
        rels,
        root=root,
        plans=plans,
        reextract=args.reextract,
        max_chunks=tk.shared.plan_limits.max_chunks,
        progress=False,
        max_llm_tokens=llm_ceiling(args.max_llm_tokens, tk.shared.plan_limits),
        max_llm_pairs=tk.shared.plan_limits.max_llm_pairs,
    )
    result = await _reply(tk, report, chosen, reextract=args.reextract)
    result.skipped = await asyncio.to_thread(_skipped_in_folders, root, args.files or [])
    for out in result.documents:
        if out.status != "failed" and out.plan:
            tk.shared.plans[out.document_key] = out.plan
    return result


def _skipped_in_folders(root: FilesRoot, named: Sequence[str]) -> dict[str, int]:
    """Files of types no loader reads in the folders an agent named, walked as `root.expand` walks.

    Globs are left out: a glob names the files it wants, and matching it again here would be a
    second glob dialect to keep in step with the root's.
    """
    found: dict[str, str] = {}
    for name in named:
        try:
            rel = root.relative(name)
            folder = root.root / rel
            if folder.is_symlink() or not folder.is_dir():
                continue
            walked = walk_files(folder, None, max_entries=MAX_WALK_ENTRIES)
        except (EvigraphError, OSError):  # `expand` accepted it; a folder changed since is not counted
            continue
        for f in walked:
            ext = os.path.splitext(f.rel)[1].lower()
            if not f.link and ext not in root.extensions:
                found.setdefault(f"{rel}/{f.rel}", escaped(ext))
    return dict(sorted(Counter(found.values()).items(), key=lambda item: (-item[1], item[0])))


async def _reply(
    tk: Toolkit, report: IngestReport, chosen: dict[str, tuple[dict[str, str], str | None]], *, reextract: bool
) -> IngestResult:
    """What the knowledge base did, in the agent's words, then an on_write finalize when due."""
    status = {IngestStatus.created: "ingested", IngestStatus.unchanged: "unchanged", IngestStatus.failed: "failed"}
    result = IngestResult(pruned=report.pruned, llm=report.llm, left=report.left, resolution=report.resolution)
    for outcome in report.documents:
        plan, reason = chosen.get(outcome.path or "", (None, None))
        label = status.get(outcome.status, "updated")
        if outcome.status == IngestStatus.updated and reextract:  # updated: it was stored before
            label = "reextracted"
        result.documents.append(
            IngestedDocument(
                document_key=outcome.key,
                path=outcome.path,
                status=label,
                plan=plan,
                plan_reason=reason,
                error=outcome.error,
                passages=outcome.chunks,
                entities=outcome.entities,
                relations=outcome.relations,
            )
        )
    files = list(dict.fromkeys(d.path for d in result.documents if d.path and d.path in chosen))
    result.hint = _pruned_hint(report.pruned, files)
    changed = any(d.status in ("ingested", "updated", "reextracted") for d in result.documents)
    if tk.shared.finalize_policy == "on_write" and (changed or tk.shared.finalize_owed):
        try:
            await tk.kb.finalize()
            tk.shared.finalize_owed, result.finalized = False, True
        except EvigraphError as exc:
            tk.shared.finalize_owed, result.finalized = True, False
            result.hint = f"documents are stored, but finalize failed ({exc.message}); the next ingest retries it"
    return result


def _chosen(name: str | None) -> str | None:
    return None if name in (None, KB_DEFAULT) else name


def _pruned_hint(pruned: PruneReport, files: list[str]) -> str | None:
    if pruned.empty:
        return None
    entities = [{"label": label} for label in pruned.entity_types]
    relations: dict[str, list[list[str]]] = {rtype: [] for rtype in pruned.relation_types}
    for p in pruned.pattern_examples:
        relations.setdefault(p.relation, []).append([p.source_label, p.target_label])
    parts = []
    if pruned.pattern_examples:
        parts.append(f"{sum(p.count for p in pruned.pattern_examples)} relation(s) dropped for undeclared patterns")
    if pruned.unknown_endpoints:
        parts.append(f"{pruned.unknown_endpoints} dropped for an Unknown end (declare that entity type)")
    if pruned.unknown_entities:
        parts.append(f"{pruned.unknown_entities} entities stored as Unknown")
    call = json.dumps(
        {
            "entities": entities,
            "relations": [{"label": k, "patterns": v} for k, v in relations.items()],
        }
    )
    text = "; ".join(parts) + "; " if parts else ""
    again = f"ingest(files={json.dumps(files[:50])}, reextract=true)" if files else "ingest(..., reextract=true)"
    if entities or relations:
        return f"{text}to keep what was dropped: set_ontology({call}), then {again}, then finalize"
    return text.rstrip("; ") or None


# -- finalize, preview_files, delete_document ------------------------------------------------


class FinalizeResult(ToolResult):
    embedded: int = 0
    themes: int = 0
    resolver: str = "exact"
    merged: int = Field(0, description="entities folded into another that is the same thing")
    candidates: int = Field(0, description="candidate pairs the resolver considered")
    unjudged: int = Field(0, description="candidates left undecided: over the pair limit or in a failed LLM call")
    llm_tokens: int = Field(0, description="LLM tokens (input + output) judging the pairs cost")

    def header(self) -> str:
        merged = f"; {self.resolver} resolution merged {self.merged} of {self.candidates} candidate pairs"
        left = f" ({self.unjudged} left undecided)" if self.unjudged else ""
        spent = f", {self.llm_tokens:,} LLM tokens" if self.llm_tokens else ""
        return f"finalized: {self.embedded} passages embedded, {self.themes} themes{merged}{left}{spent}"


@TOOLS.tool(
    "finalize",
    FinalizeInput,
    "After a batch of ingests: embed passages that have no vector yet, merge entities that are one thing "
    "(resolver: exact, fuzzy or llm, as the operator allows), and recompute themes (communities). "
    "Call it once after the last ingest of a batch, not after each.",
    write=True,
    destructive=True,
    offered=lambda offer: offer.finalize_policy == "manual",
)
async def finalize(tk: Toolkit, args: FinalizeInput) -> FinalizeResult:
    limits = tk.shared.plan_limits
    resolver = allowed_finalize_resolver(args.resolver, limits)
    report = await tk.kb.finalize(resolver=resolver, max_llm_pairs=limits.max_llm_pairs)
    tk.shared.finalize_owed = False
    r = report.resolution
    return FinalizeResult(
        embedded=report.embedded,
        themes=report.themes,
        resolver=r.resolver if r is not None else resolver,
        merged=r.merged if r else 0,
        candidates=r.candidates if r else 0,
        unjudged=r.unjudged if r else 0,
        llm_tokens=r.llm.total_tokens if r is not None and r.llm is not None else 0,
    )


class PreviewResult(ToolResult):
    root: str
    files: list[FileSample]
    total_files: int
    next_offset: int | None

    def header(self) -> str:
        more = f"; next_offset {self.next_offset}" if self.next_offset is not None else "; last page"
        return f"{len(self.files)} of {self.total_files} files{more}"

    def sections(self) -> list[Section]:
        est = "~" if any(f.chars_estimated for f in self.files) else ""
        lines = [
            f"{display_name(f.path)} ({est}{f.chars} chars)"
            + (f" error: {display_text(f.error)}" if f.error else f"\n{f.sample}")
            for f in self.files
        ]
        return [Section("Files", lines, 2.0)]


@TOOLS.tool(
    "preview_files",
    PreviewFilesInput,
    "One sample from the middle of each file under the files root (a bounded window, never the whole file), "
    "paged: call again with next_offset until it is null. Use it to design an ontology before ingesting.",
    write=True,
    offered=lambda offer: offer.files_root,
)
async def preview_files(tk: Toolkit, args: PreviewFilesInput) -> PreviewResult:
    assert tk.files_root is not None
    page = await asyncio.to_thread(tk.files_root.preview, args.offset)
    return PreviewResult(root=page.root, files=page.files, total_files=page.total_files, next_offset=page.next_offset)


class DeleteResult(ToolResult):
    document_key: str
    deleted: bool

    def header(self) -> str:
        return f"{display_name(self.document_key)}: {'deleted' if self.deleted else 'not found'}"


@TOOLS.tool(
    "delete_document",
    DeleteDocumentInput,
    "Remove a document, its passages, and the extracted entities only it mentioned.",
    write=True,
    destructive=True,
)
async def delete_document(tk: Toolkit, args: DeleteDocumentInput) -> DeleteResult:
    deleted = await tk.kb.delete_document(args.document_key, missing_ok=True)
    tk.shared.plans.pop(args.document_key, None)
    result = DeleteResult(document_key=args.document_key, deleted=deleted)
    if not deleted:
        result.hint = "no such document; list keys with cypher_query('MATCH (d:Document) RETURN d.key LIMIT 50')"
    return result


# -- agent-recorded knowledge ----------------------------------------------------------------


class UpsertResult(ToolResult):
    written: list[str] = Field(default_factory=list, description="ids written (created or merged)")

    def header(self) -> str:
        return f"{len(self.written)} written: {', '.join(self.written[:20])}"


async def _declared_labels(tk: Toolkit) -> set[str]:
    return {e.label for e in (await tk.kb.load_ontology()).entities}


def _provenance(tk: Toolkit) -> str:
    """Who sets a property: the agent the toolkit serves when it has a name, else 'agent'."""
    traces = tk.traces
    return f"{AGENT_SOURCE}:{traces.agent}" if traces is not None and traces.agent else AGENT_SOURCE


@TOOLS.tool(
    "upsert_entities",
    UpsertEntitiesInput,
    "Record entities the agent established (idempotent: the same name and label merge into one entity, "
    "descriptions and aliases accumulate). Labels must be declared (set_ontology). properties: values of the "
    "properties the label declares (get_ontology lists them), checked before anything is written; properties not "
    "given keep their values, null removes one. Provenance: _source='agent', each property's setter recorded.",
    write=True,
    destructive=True,
)
async def upsert_entities(tk: Toolkit, args: UpsertEntitiesInput) -> UpsertResult:
    declared = await _declared_labels(tk)
    undeclared = sorted({e.label for e in args.entities} - declared)
    if undeclared:
        raise ToolError(f"undeclared label(s): {', '.join(undeclared)}", hint="declare them with set_ontology first")
    entities: list[ExtractedEntity] = []
    properties: dict[str, dict[str, Any]] = {}
    for e in args.entities:
        base = ExtractedEntity.create(e.name, e.label, e.description)
        entities.append(base.model_copy(update={"aliases": tuple(dict.fromkeys([*base.aliases, *e.aliases]))}))
        if e.properties:
            properties.setdefault(base.id, {}).update(e.properties)
    await tk.kb.upsert_entities(entities, AGENT_SOURCE, properties, property_source=_provenance(tk))
    return UpsertResult(written=[e.id for e in entities])


@TOOLS.tool(
    "upsert_relations",
    UpsertRelationsInput,
    "Record relations between existing entities (given by name and label), each a one-sentence fact with "
    "the passages that support it (evidence numbers or ids). Idempotent. The type must be declared "
    "(set_ontology), and so must its properties (values as for upsert_entities). Provenance: _source='agent'.",
    write=True,
    destructive=True,
)
async def upsert_relations(tk: Toolkit, args: UpsertRelationsInput) -> UpsertResult:
    ontology = await tk.kb.load_ontology()
    types = {r.type for r in ontology.relations}
    if types and (undeclared := sorted({r.type for r in args.relations} - types)):
        raise ToolError(f"undeclared relation type(s): {', '.join(undeclared)}", hint="declare them with set_ontology")
    ends = {entity_id(ref.name, ref.label) for r in args.relations for ref in (r.source, r.target)}
    if missing := await tk.kb.missing_entities(sorted(ends)):
        raise ToolError(f"unknown entities: {', '.join(missing[:10])}", hint="record them with upsert_entities first")
    rows: list[tuple[ExtractedRelation, list[str]]] = []
    properties: dict[str, dict[str, Any]] = {}
    for r in args.relations:
        passages = [tk.resolve(ref, "passage").id for ref in r.evidence]
        if passages and await tk.kb.missing_passages(passages):
            raise ToolError("some evidence passages no longer exist", hint="cite current passages (search again)")
        rel = ExtractedRelation(
            source=entity_id(r.source.name, r.source.label),
            target=entity_id(r.target.name, r.target.label),
            type=r.type,
            fact=r.fact,
            confidence=r.confidence,
            chunk_indexes=(),
        )
        rows.append((rel, passages))
        if r.properties:
            properties.setdefault(rel.id, {}).update(r.properties)
    await tk.kb.upsert_relations(rows, AGENT_SOURCE, properties, property_source=_provenance(tk))
    return UpsertResult(written=[rel.id for rel, _ in rows])
