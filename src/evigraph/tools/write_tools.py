"""Write tools: shaping the ontology, ingesting text and files, finalizing, and agent-recorded knowledge.

None of them is offered by a read-only toolkit. File access goes through `FilesRoot`, which
refuses every path leading outside the root; text can never overwrite a document read from a
file, so an agent cannot forge a file's content.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from evigraph.display import display_name, display_text
from evigraph.errors import EvigraphError, InputError, ToolError
from evigraph.ingest.loaders import loader_for
from evigraph.ingest.loaders.base import RejectedRecord
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.ingest.pipeline import text_document
from evigraph.models import (
    EntityType,
    ExtractedEntity,
    ExtractedRelation,
    IngestStatus,
    LoadedDocument,
    Ontology,
    PruneReport,
    RelationType,
    SourceRecord,
    SourceState,
    entity_id,
)
from evigraph.retrieval.context import Section
from evigraph.surrogates import escaped, surrogate_at
from evigraph.tools.files import FileSample
from evigraph.tools.inputs import (
    DeleteDocumentInput,
    IngestInput,
    NoInput,
    PreviewFilesInput,
    SetOntologyInput,
    UpsertEntitiesInput,
    UpsertRelationsInput,
)
from evigraph.tools.plans import KB_DEFAULT, choose_plan, describe_options
from evigraph.tools.registry import tool
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit

AGENT_SOURCE = "agent"


def _has_root(tk: Toolkit) -> bool:
    return tk.files_root is not None


# -- set_ontology ----------------------------------------------------------------------------


class OntologyChange(ToolResult):
    added_entity_types: list[str] = Field(default_factory=list)
    added_relation_types: list[str] = Field(default_factory=list)
    added_patterns: list[tuple[str, str, str]] = Field(default_factory=list, description="(relation, source, target)")
    replaced_default: bool = Field(False, description="the default types were dropped: nothing was ingested yet")
    unrestricted: list[str] = Field(
        default_factory=list, description="relation types that already allow every pair, so patterns were not added"
    )

    def header(self) -> str:
        parts = [
            f"entity types added: {', '.join(self.added_entity_types) or 'none'}",
            f"relation types added: {', '.join(self.added_relation_types) or 'none'}",
            f"patterns added: {', '.join(f'{r} {a}->{b}' for r, a, b in self.added_patterns) or 'none'}",
        ]
        if self.unrestricted:
            parts.append(f"already allowing every pair, patterns not added: {', '.join(self.unrestricted)}")
        if self.replaced_default:
            parts.append("the default ontology was replaced (nothing was ingested yet)")
        return "; ".join(parts)


@tool(
    "set_ontology",
    SetOntologyInput,
    "Declare or extend the entity and relation types extraction uses. Only adds: new types, descriptions "
    "and relation patterns [[source label, target label], ...]. Labels: letters (any script), digits, "
    "spaces, '-' and '_'. Declaring before the first ingest keeps the default types out. Documents already "
    "ingested keep their old extraction until ingest(..., reextract=true).",
    write=True,
    destructive=True,
)
async def set_ontology(tk: Toolkit, args: SetOntologyInput) -> OntologyChange:
    if not args.entities and not args.relations:
        raise ToolError("nothing to declare", hint="pass entities=[{label: ...}] and/or relations=[{label: ...}]")
    store = await tk.kb.open_store(for_write=True)
    current = await tk.kb.get_ontology()
    fresh = await store.get_setting("ontology") is None and (await store.counts()).documents == 0
    change = OntologyChange(replaced_default=fresh and current == DEFAULT_ONTOLOGY)
    entities = {} if change.replaced_default else {e.label: e for e in current.entities}
    for e in args.entities:
        old = entities.get(e.label)
        if old is None:
            change.added_entity_types.append(e.label)
            entities[e.label] = EntityType(label=e.label, description=e.description, properties=tuple(e.properties))
        else:
            props = tuple(dict.fromkeys([*old.properties, *e.properties]))
            entities[e.label] = EntityType(
                label=e.label, description=old.description or e.description, properties=props
            )
    relations = {} if change.replaced_default else {r.type: r for r in current.relations}
    for r in args.relations:
        unknown = sorted({label for pair in r.patterns for label in pair if label not in entities})
        if unknown:
            raise ToolError(
                f"relation {r.label} names undeclared entity type(s): {', '.join(unknown)}",
                hint="declare them in entities=[...] in the same call",
            )
        old_rel = relations.get(r.label)
        if old_rel is None:
            change.added_relation_types.append(r.label)
            relations[r.label] = RelationType(
                type=r.label, description=r.description, patterns=tuple(tuple(p) for p in r.patterns)
            )
            continue
        if not old_rel.patterns:
            if r.patterns:  # it already allows every pair; adding patterns would narrow it
                change.unrestricted.append(r.label)
            continue
        new = [tuple(p) for p in r.patterns if tuple(p) not in old_rel.patterns]
        change.added_patterns += [(r.label, a, b) for a, b in new]
        relations[r.label] = RelationType(
            type=r.label, description=old_rel.description or r.description, patterns=(*old_rel.patterns, *new)
        )
    await tk.kb.set_ontology(Ontology(entities=tuple(entities.values()), relations=tuple(relations.values())))
    if change.added_entity_types or change.added_relation_types or change.added_patterns:
        change.hint = "new documents use it now; re-extract ingested ones with ingest(..., reextract=true)"
    return change


# -- ingest ----------------------------------------------------------------------------------


class IngestedDocument(BaseModel):
    document_id: str
    path: str | None = None
    status: str = Field(description="ingested, reextracted, updated, unchanged or failed")
    plan: dict[str, str] | None = None
    plan_reason: str | None = None
    error: str | None = None
    chunks: int = 0
    entities: int = 0
    relations: int = 0


class IngestResult(ToolResult):
    documents: list[IngestedDocument] = Field(default_factory=list)
    pruned: PruneReport = Field(default_factory=PruneReport)
    finalized: bool | None = Field(None, description="whether an on_write finalize ran (None: not due)")

    def header(self) -> str:
        counts: dict[str, int] = {}
        for d in self.documents:
            counts[d.status] = counts.get(d.status, 0) + 1
        return "ingest: " + ", ".join(f"{k} {v}" for k, v in counts.items())

    def sections(self) -> list[Section]:
        docs = [
            f"{display_name(d.document_id)}: {d.status}"
            + (f" ({d.chunks} passages, {d.entities} entities, {d.relations} relations)" if d.chunks else "")
            + (f"; plan {d.plan}" if d.plan else "")
            + (f"; {d.plan_reason}" if d.plan_reason else "")
            + (f"; error: {display_text(d.error)}" if d.error else "")
            for d in self.documents
        ]
        pruned = [] if self.pruned.empty else [self.pruned.model_dump_json(exclude_defaults=True)]
        return [Section("Documents", docs, 2.0), Section("Pruned by the ontology", pruned)]


def _ingest_description(tk: Toolkit) -> str:
    text = (
        "Add a text (text + document_id) or re-extract one (reextract=true). Unchanged documents are skipped; "
        "a changed one replaces its old version. The result reports what the ontology missed (pruned) with "
        "the set_ontology call that keeps it."
    )
    if tk.files_root is not None:
        text += (
            " With files: paths or globs under the files root (at most 50 per call; ids are 'file:' + the "
            "path), and plan: rules {match, chunker, extractor, resolver}, the first matching a file's path "
            "applies. Allowed options and their cost:\n" + describe_options(tk.shared.plan_limits)
        )
    return text


@tool("ingest", IngestInput, _ingest_description, write=True, destructive=True, idempotent=True)
async def ingest(tk: Toolkit, args: IngestInput) -> IngestResult:
    if args.files is not None:
        if args.text is not None or args.document_id is not None or args.title is not None:
            raise ToolError(
                "pass text or files, not both: files take their ids and titles from the files; "
                "text, document_id and title are for text",
                hint="make one call for files and another for text",
            )
        return await _ingest_files(tk, args)
    if args.plan is not None:
        raise ToolError("a plan applies to files only", hint="pass files=[...] with plan=, or drop plan for text")
    if args.text is None:
        raise ToolError(
            "nothing to ingest",
            hint="pass text= and document_id= (re-extracting a text needs its text too), or files= with a files root",
        )
    if not args.document_id:
        raise ToolError("text needs a document_id", hint="pass document_id='notes/meeting-3'")
    await _refuse_file_id(tk, args.document_id)
    doc = text_document(args.text, args.document_id, args.title)
    return await _run(tk, [(doc, None, None)], {}, reextract=args.reextract)


async def _refuse_file_id(tk: Toolkit, document_id: str) -> None:
    if document_id.startswith("file:"):
        raise ToolError(
            f"{document_id!r} is a file's id; text cannot be stored under it",
            hint="use ingest(files=[...]) for files, or another document_id for text",
        )
    store = await tk.kb.open_store(for_write=True)
    stored = (await store.get_documents([document_id])).get(document_id)
    from_file = stored is not None and (stored.loader != "text" or stored.path not in (None, document_id))
    if tk.files_root is not None and not from_file:
        try:
            tk.files_root.relative(document_id)
            from_file = (tk.files_root.root / document_id).is_file()
        except (EvigraphError, OSError):  # OSError: a name too long to be a file (ENAMETOOLONG)
            pass
    if from_file:
        raise ToolError(
            f"{document_id!r} was read from a file; text cannot overwrite or extend it",
            hint="re-read the file with ingest(files=[...], reextract=true), or use another document_id",
        )


async def _ingest_files(tk: Toolkit, args: IngestInput) -> IngestResult:
    root = tk.files_root
    if root is None:
        raise ToolError("this toolkit has no files root, so ingest takes text only", hint="pass text= and document_id=")
    rels = await asyncio.to_thread(root.expand, args.files or [])
    planned: list[tuple[LoadedDocument | None, str, dict[str, str], str | None, str | None]] = []
    for rel in rels:
        doc_id = root.document_id(rel)
        reason: str | None
        if args.plan is None and args.reextract and doc_id in tk.shared.plans:
            plan, reason = tk.shared.plans[doc_id], "kept the plan of this file's last ingest"
        else:
            plan, reason = choose_plan(rel, args.plan, tk.shared.plan_limits)
            if args.plan is None and args.reextract:
                reason = "no plan remembered for this file (or none passed); used the defaults"
        try:
            if surrogate_at(rel) is not None:  # a name that is not UTF-8 cannot be stored, cited or sent
                doc_id = escaped(doc_id)
                raise InputError(f"{escaped(rel)}: the file name is not valid UTF-8", "rename it to a UTF-8 name")
            data = await asyncio.to_thread(root.read_bytes, rel, max_bytes=tk.shared.max_file_bytes)
            loader = loader_for(rel, tk.kb.loaders)
            docs = list(loader.stream_bytes(data, Path(rel), doc_id))
        except EvigraphError as exc:
            planned.append((None, doc_id, plan, reason, str(exc)))
            continue
        for d in docs:  # a bad record of a JSONL file fails alone
            if isinstance(d, RejectedRecord):
                planned.append((None, d.key, plan, reason, d.error))
            else:
                planned.append((d.model_copy(update={"path": rel}), d.key, plan, reason, None))
    groups: dict[str, list[tuple[LoadedDocument, str | None, dict[str, str]]]] = {}
    failed = []
    for loaded, doc_id, chosen, why, error in planned:
        if loaded is None:
            failed.append(IngestedDocument(document_id=doc_id, status="failed", plan=chosen, error=error))
            continue
        groups.setdefault(json.dumps(chosen, sort_keys=True), []).append((loaded, why, chosen))
    if failed:  # as the knowledge base does for files it cannot load, so source_status says "failed"
        store = await tk.kb.open_store(for_write=True)
        await store.log_sources(
            [SourceRecord(key=d.document_id, state=SourceState.failed, error=d.error) for d in failed]
        )
    result = IngestResult(documents=failed)
    for key, items in groups.items():
        group_plan: dict[str, str] = json.loads(key)
        part = await _run(tk, [(d, why, group_plan) for d, why, _ in items], group_plan, reextract=args.reextract)
        result.documents += part.documents
        result.pruned.merge(part.pruned)
        result.finalized = part.finalized if part.finalized is not None else result.finalized
        result.hint = part.hint or result.hint
    for out in result.documents:
        if out.status != "failed" and out.plan:
            tk.shared.plans[out.document_id] = out.plan
    return result


async def _run(
    tk: Toolkit,
    items: list[tuple[LoadedDocument, str | None, dict[str, str] | None]],
    plan: dict[str, str],
    *,
    reextract: bool,
) -> IngestResult:
    store = await tk.kb.open_store(for_write=True)
    keys = [d.key for d, _, _ in items]
    existing = await store.get_documents(keys)
    tk.shared.pending.update(keys)
    try:
        report = await tk.kb.ingest_documents(
            [d for d, _, _ in items],
            chunker=_chosen(plan.get("chunker")),
            extractor=_chosen(plan.get("extractor")),
            reextract=reextract,
            max_chunks=tk.shared.plan_limits.max_chunks if plan else None,
            exclusive=reextract or bool(existing),
            progress=False,
        )
    finally:
        tk.shared.pending.difference_update(keys)
    by_key = {d.key: (reason, p) for d, reason, p in items}
    result = IngestResult(pruned=report.pruned)
    for outcome in report.documents:
        reason, p = by_key.get(outcome.key, (None, None))
        status = {IngestStatus.created: "ingested", IngestStatus.unchanged: "unchanged", IngestStatus.failed: "failed"}
        label = status.get(outcome.status, "updated")
        old = existing.get(outcome.key)
        if outcome.status == IngestStatus.updated and reextract and old is not None:
            label = "reextracted"
        result.documents.append(
            IngestedDocument(
                document_id=outcome.key,
                path=outcome.path,
                status=label,
                plan=p,
                plan_reason=reason,
                error=outcome.error,
                chunks=outcome.chunks,
                entities=outcome.entities,
                relations=outcome.relations,
            )
        )
    result.hint = _pruned_hint(report.pruned, [d.document_id for d in result.documents if d.path])
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


def _pruned_hint(pruned: PruneReport, file_ids: list[str]) -> str | None:
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
    again = f"ingest(files={json.dumps(file_ids[:50])}, reextract=true)" if file_ids else "ingest(..., reextract=true)"
    if entities or relations:
        return f"{text}to keep what was dropped: set_ontology({call}), then {again}, then finalize"
    return text.rstrip("; ") or None


# -- finalize, preview_files, delete_document ------------------------------------------------


class FinalizeResult(ToolResult):
    embedded: int = 0
    themes: int = 0

    def header(self) -> str:
        return f"finalized: {self.embedded} passages embedded, {self.themes} themes"


@tool(
    "finalize",
    NoInput,
    "After a batch of ingests: embed passages that have no vector yet and recompute themes (communities). "
    "Call it once after the last ingest of a batch, not after each.",
    write=True,
    destructive=True,
    available=lambda tk: tk.shared.finalize_policy == "manual",
)
async def finalize(tk: Toolkit, args: NoInput) -> FinalizeResult:
    report = await tk.kb.finalize()
    tk.shared.finalize_owed = False
    return FinalizeResult(embedded=report.embedded, themes=report.themes)


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


@tool(
    "preview_files",
    PreviewFilesInput,
    "One sample from the middle of each file under the files root (a bounded window, never the whole file), "
    "paged: call again with next_offset until it is null. Use it to design an ontology before ingesting.",
    write=True,
    available=_has_root,
)
async def preview_files(tk: Toolkit, args: PreviewFilesInput) -> PreviewResult:
    assert tk.files_root is not None
    page = await asyncio.to_thread(tk.files_root.preview, args.offset)
    return PreviewResult(root=page.root, files=page.files, total_files=page.total_files, next_offset=page.next_offset)


class DeleteResult(ToolResult):
    document_id: str
    deleted: bool

    def header(self) -> str:
        return f"{display_name(self.document_id)}: {'deleted' if self.deleted else 'not found'}"


@tool(
    "delete_document",
    DeleteDocumentInput,
    "Remove a document, its passages, and the extracted entities only it mentioned.",
    write=True,
    destructive=True,
)
async def delete_document(tk: Toolkit, args: DeleteDocumentInput) -> DeleteResult:
    deleted = await tk.kb.delete(args.document_id)
    tk.shared.plans.pop(args.document_id, None)
    result = DeleteResult(document_id=args.document_id, deleted=deleted)
    if not deleted:
        result.hint = "no such document; list keys with cypher_query('MATCH (d:Document) RETURN d.key LIMIT 50')"
    return result


# -- agent-recorded knowledge ----------------------------------------------------------------


class UpsertResult(ToolResult):
    written: list[str] = Field(default_factory=list, description="ids written (created or merged)")

    def header(self) -> str:
        return f"{len(self.written)} written: {', '.join(self.written[:20])}"


async def _declared_labels(tk: Toolkit) -> set[str]:
    return {e.label for e in (await tk.kb.get_ontology()).entities}


@tool(
    "upsert_entities",
    UpsertEntitiesInput,
    "Record entities the agent established (idempotent: the same name and label merge into one entity, "
    "descriptions and aliases accumulate). Labels must be declared (set_ontology). Provenance: _source='agent'.",
    write=True,
    destructive=True,
)
async def upsert_entities(tk: Toolkit, args: UpsertEntitiesInput) -> UpsertResult:
    declared = await _declared_labels(tk)
    undeclared = sorted({e.label for e in args.entities} - declared)
    if undeclared:
        raise ToolError(f"undeclared label(s): {', '.join(undeclared)}", hint="declare them with set_ontology first")
    entities = []
    for e in args.entities:
        base = ExtractedEntity.create(e.name, e.label, e.description)
        entities.append(base.model_copy(update={"aliases": tuple(dict.fromkeys([*base.aliases, *e.aliases]))}))
    await tk.kb.upsert_entities(entities, AGENT_SOURCE)
    return UpsertResult(written=[e.id for e in entities])


@tool(
    "upsert_relations",
    UpsertRelationsInput,
    "Record relations between existing entities (given by name and label), each a one-sentence fact with "
    "the passages that support it (evidence numbers or ids). Idempotent. The type must be declared "
    "(set_ontology). Provenance: _source='agent'.",
    write=True,
    destructive=True,
)
async def upsert_relations(tk: Toolkit, args: UpsertRelationsInput) -> UpsertResult:
    store = await tk.kb.open_store(for_write=True)
    ontology = await tk.kb.get_ontology()
    types = {r.type for r in ontology.relations}
    if types and (undeclared := sorted({r.type for r in args.relations} - types)):
        raise ToolError(f"undeclared relation type(s): {', '.join(undeclared)}", hint="declare them with set_ontology")
    ends = {entity_id(ref.name, ref.label) for r in args.relations for ref in (r.source, r.target)}
    known = {e.id for e in await store.entities_by_ids(sorted(ends))}
    if missing := sorted(ends - known):
        raise ToolError(f"unknown entities: {', '.join(missing[:10])}", hint="record them with upsert_entities first")
    rows = []
    for r in args.relations:
        chunks = [tk.evidence_id(ref, "passage:").removeprefix("passage:") for ref in r.evidence]
        if chunks and len(await store.chunks_by_ids(chunks)) < len(set(chunks)):
            raise ToolError("some evidence passages no longer exist", hint="cite current passages (search again)")
        rel = ExtractedRelation(
            source=entity_id(r.source.name, r.source.label),
            target=entity_id(r.target.name, r.target.label),
            type=r.type,
            fact=r.fact,
            confidence=r.confidence,
            chunk_indexes=(),
        )
        rows.append((rel, chunks))
    await tk.kb.upsert_relations(rows, AGENT_SOURCE)
    return UpsertResult(written=[rel.id for rel, _ in rows])
