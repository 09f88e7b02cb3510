"""One code ingest: find the files, parse what changed, resolve names, write the difference.

Incremental per file: a module keeps its source's hash, and a file whose hash is unchanged is not
read again. A changed file's nodes are replaced, a deleted file's nodes go (a file is deleted when
it is missing from a folder walked whole), a file that fails to parse or is too large keeps what
was stored for it. The derived edges (IMPORTS, INHERITS, CALLS) are resolved again over the whole
graph on every run and only their difference is written, so an edge into a changed module from an
unchanged one is found again, and a run after one that died part-way repairs what it left.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from evigraph.code_records import (
    CodeChange,
    CodeGraph,
    CodeRepo,
    CodeSymbol,
    EdgeKind,
    member_id,
    module_id,
    repo_id,
)
from evigraph.ingest.code.files import CodeFile, FoundCode, find_code, module_name, read_source
from evigraph.ingest.code.parsed import CodeParseError, ParsedFile
from evigraph.ingest.code.resolve import Resolver
from evigraph.store.base import GraphStore

if TYPE_CHECKING:
    from evigraph.ingest.files_root import FilesRoot


class CodeFileIssue(BaseModel):
    path: str
    error: str


class CodeIngestReport(BaseModel):
    """What one code ingest did; counts of nodes and edges are those written, not those held."""

    repos: list[str] = Field(default_factory=list, description="repository names, as Repo nodes hold them")
    files: int = Field(0, description="source files found")
    parsed: int = Field(0, description="files new or changed, read and parsed")
    unchanged: int = Field(0, description="files skipped: their content hash is the one stored")
    removed: int = Field(0, description="modules deleted: their file is gone")
    failed: list[CodeFileIssue] = Field(default_factory=list, description="files not ingested; what was stored stays")
    too_large: list[CodeFileIssue] = Field(default_factory=list, description="files skipped for their size")
    nodes_added: int = 0
    nodes_removed: int = 0
    edges_added: int = Field(0, description="CONTAINS, IMPORTS, INHERITS and CALLS edges written")
    edges_removed: int = 0
    passages_linked: int = Field(0, description="passages linked to the new symbols they name (MENTIONS)")
    symbols_linked: int = Field(0, description="new symbols named by those passages")

    def links_text(self) -> str:
        """`N passages linked to M symbols`, or '' when no passage names a new symbol."""
        if not self.passages_linked:
            return ""
        passages = "passage" if self.passages_linked == 1 else "passages"
        symbols = "symbol" if self.symbols_linked == 1 else "symbols"
        return f"{self.passages_linked} {passages} linked to {self.symbols_linked} {symbols}"


async def ingest_code(
    store: GraphStore,
    paths: Sequence[str],
    *,
    calls: bool = True,
    max_file_bytes: int | None = None,
    files_root: FilesRoot | None = None,
) -> CodeIngestReport:
    """Ingest the structure of the source files under `paths` into `store`.

    `calls=False` leaves CALLS edges as they are (new functions get none; callee names are still
    recorded, so a later run with calls links them).
    """
    graph = await store.code_graph()
    known = frozenset(Path(r.root) for r in graph.repos)
    found = await asyncio.to_thread(
        find_code, list(paths), max_file_bytes=max_file_bytes, files_root=files_root, known=known
    )
    report = CodeIngestReport(
        files=sum(len(r.files) for r in found.repos.values()),
        failed=[CodeFileIssue(path=p, error=e) for p, e in found.failures],
        too_large=[
            CodeFileIssue(path=p, error=f"{size / 1024:.0f} KB is over the limit") for p, size in found.too_large
        ],
    )
    change = CodeChange()
    repos = _name_repos(found, graph, change)
    report.repos = [r.name for r in repos.values()]
    stored = {s.id: s for s in graph.symbols}
    held = _held(graph)
    ceiling = files_root.root if files_root is not None else None
    for root, repo_files in found.repos.items():
        repo = repos[root]
        parsed = await asyncio.to_thread(
            _parse_changed, repo_files.files, stored, repo, max_file_bytes, files_root, ceiling, report
        )
        gone = _deleted(repo.id, repo_files.walked, {f.rel for f in repo_files.files}, stored, report)
        for module in gone:
            change.removed += [module, *held.get(module, [])]
        report.removed += len(gone)
        for mid, symbols in parsed.items():
            if mid in stored:
                change.removed += [mid, *held.get(mid, [])]
            change.symbols += symbols
    removed = set(change.removed)
    after = [s for s in graph.symbols if s.id not in removed] + change.symbols
    kinds: tuple[EdgeKind, ...] = ("IMPORTS", "INHERITS", "CALLS") if calls else ("IMPORTS", "INHERITS")
    wanted = await asyncio.to_thread(lambda: Resolver(after).edges(kinds))
    kept = {e for e in graph.edges if e.source not in removed and e.target not in removed and e.kind in kinds}
    change.added_edges = sorted(wanted - kept, key=lambda e: (e.kind, e.source, e.target))
    change.removed_edges = sorted(kept - wanted, key=lambda e: (e.kind, e.source, e.target))
    await store.write_code(change)
    report.nodes_added, report.nodes_removed = len(change.symbols), len(removed)
    report.edges_added = len(change.added_edges) + len(change.symbols)  # each new symbol's CONTAINS edge
    report.edges_removed = len(change.removed_edges)
    if change.symbols and await store.holds_documents():
        from evigraph.ingest.code.mentions import link_passages, linked_counts

        linked = await link_passages(store, after, only={s.id for s in change.symbols})
        report.passages_linked, report.symbols_linked = linked_counts(linked)
    return report


def _name_repos(found: FoundCode, graph: CodeGraph, change: CodeChange) -> dict[Path, CodeRepo]:
    """A repository keeps its name across runs; a second folder of the same name gets a suffix."""
    by_root = {r.root: r for r in graph.repos}
    taken = {r.name for r in graph.repos}
    out: dict[Path, CodeRepo] = {}
    for root in found.repos:
        repo = by_root.get(str(root))
        if repo is None:
            name = root.name or "repo"
            if name in taken:
                name = f"{name}-{hashlib.sha1(str(root).encode()).hexdigest()[:6]}"
            taken.add(name)
            repo = CodeRepo(id=repo_id(name), name=name, root=str(root))
            change.repos.append(repo)
        out[root] = repo
    return out


def _parse_changed(
    files: list[CodeFile],
    stored: dict[str, CodeSymbol],
    repo: CodeRepo,
    max_file_bytes: int | None,
    files_root: FilesRoot | None,
    ceiling: Path | None,
    report: CodeIngestReport,
) -> dict[str, list[CodeSymbol]]:
    """Module id -> its new symbols (module first), for every file new or changed that parses."""
    out: dict[str, list[CodeSymbol]] = {}
    for file in sorted(files, key=lambda f: f.rel):
        mid = module_id(repo.name, file.rel)
        try:
            source = read_source(file, max_file_bytes, files_root)
        except (OSError, ValueError) as exc:
            report.failed.append(CodeFileIssue(path=file.shown, error=f"cannot be read: {exc}"))
            continue
        except Exception as exc:  # an InputError from the files root: refused, reported
            report.failed.append(CodeFileIssue(path=file.shown, error=str(exc)))
            continue
        digest = hashlib.sha256(source).hexdigest()
        old = stored.get(mid)
        if old is not None and old.content_hash == digest:
            report.unchanged += 1
            continue
        name, package = module_name(file, ceiling)
        try:
            parsed = _parse(file, source, package)
        except CodeParseError as exc:
            report.failed.append(CodeFileIssue(path=file.shown, error=str(exc)))
            continue
        out[mid] = _symbols(parsed, repo, file, parsed.module or name, digest)
        report.parsed += 1
    return out


def _parse(file: CodeFile, source: bytes, package: str) -> ParsedFile:
    if file.language == "python":
        from evigraph.ingest.code.python_parser import parse_python

        return parse_python(source, package)
    if file.language == "go":
        from evigraph.ingest.code.go_parser import parse_go

        return parse_go(source)
    if file.language == "rust":
        from evigraph.ingest.code.rust_parser import parse_rust, rust_module

        return parse_rust(source, rust_module(file.rel))
    if file.language == "java":
        from evigraph.ingest.code.java_parser import parse_java

        return parse_java(source, file.rel)
    from evigraph.ingest.code.typescript_parser import parse_typescript

    return parse_typescript(source, file.rel, file.language)


def _symbols(parsed: ParsedFile, repo: CodeRepo, file: CodeFile, name: str, digest: str) -> list[CodeSymbol]:
    mid = module_id(repo.name, file.rel)
    module = CodeSymbol(
        id=mid,
        kind="Module",
        repo=repo.id,
        path=file.rel,
        module=name,
        name=name,
        qualname=name,
        parent=repo.id,
        language=parsed.language,
        docstring=parsed.docstring,
        line_start=1,
        line_end=parsed.line_end,
        refs=tuple(t for _, t in parsed.imports),
        aliases=tuple(a for a, _ in parsed.imports),
        content_hash=digest,
    )
    out = [module]
    for s in parsed.symbols:
        parent = mid
        if s.parent is not None:
            owner = next((o for o in parsed.symbols if o.qualname == s.parent), None)
            parent = member_id(owner.kind, repo.name, file.rel, owner.qualname) if owner else mid
        out.append(
            CodeSymbol(
                id=member_id(s.kind, repo.name, file.rel, s.qualname),
                kind=s.kind,
                repo=repo.id,
                path=file.rel,
                module=name,
                name=s.name,
                qualname=s.qualname,
                parent=parent,
                language=parsed.language,
                signature=s.signature,
                docstring=s.docstring,
                line_start=s.line_start,
                line_end=s.line_end,
                refs=tuple(s.refs),
            )
        )
    return out


def _deleted(
    repo: str, walked: list[str], present: set[str], stored: dict[str, CodeSymbol], report: CodeIngestReport
) -> list[str]:
    """Modules of `repo` under a folder walked whole whose file was not found (nor failed, nor skipped)."""
    kept = {i.path for i in (*report.failed, *report.too_large)}
    gone = []
    for s in stored.values():
        if s.kind != "Module" or s.repo != repo or s.path in present:
            continue
        under = any(not w or s.path == w or s.path.startswith(w + "/") for w in walked)
        if under and not any(k == s.path or k.endswith("/" + s.path) for k in kept):
            gone.append(s.id)
    return gone


def _held(graph: CodeGraph) -> dict[str, list[str]]:
    """Module id -> ids of the symbols it holds, read from the ids (a member's is its module's path + `#`)."""
    out: dict[str, list[str]] = {}
    for s in graph.symbols:
        if s.kind != "Module":
            out.setdefault(module_id(s.repo.removeprefix("Repo:"), s.path), []).append(s.id)
    return out
