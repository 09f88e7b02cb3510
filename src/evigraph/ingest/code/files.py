"""Finding the source files to ingest, the repository each belongs to, and each module's name.

Folders are walked as document ingest walks them (`ingest.sources.walk_files`: hidden entries and
dependency folders skipped, linked folders never entered); linked files are skipped too, as a
link's target may belong to another repository. A repository is the git work tree holding a path
(the nearest folder above it with `.git`), else the folder named; under an agent's files root the
search never goes above the root, and every read goes through it.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from evigraph.errors import EvigraphError, InputError
from evigraph.ingest.code.grammars import LANGUAGES, language_of
from evigraph.ingest.code.rust_parser import rust_module
from evigraph.ingest.code.typescript_parser import module_name as script_module
from evigraph.ingest.files_root import MAX_WALK_ENTRIES, FilesRoot
from evigraph.ingest.sources import walk_files

CODE_EXTENSIONS = frozenset(LANGUAGES)
MAX_CODE_FILES = 50_000
"""Files one call reads at most: past it the call fails with a hint to name a smaller folder."""
GENERATED_DIRS = frozenset({"vendor", "dist", "build"})
"""Folders a walk passes over: copies of other projects' code and build output, whose symbols
would crowd the project's own (a vendored cytoscape.min.js alone is 440 KB of one-letter names).
A file named directly is read wherever it lies."""
MINIFIED_SUFFIXES = (".min.js", ".bundle.js")


@dataclass(frozen=True)
class CodeFile:
    root: Path
    """The repository root, absolute."""
    rel: str
    """Posix path relative to the repository root."""
    language: str
    size: int
    shown: str
    """How reports name the file: its absolute path, or its path under the files root."""
    read_as: str = ""
    """Its path under the files root, when read through one."""


@dataclass
class RepoFiles:
    root: Path
    files: list[CodeFile] = field(default_factory=list)
    walked: list[str] = field(default_factory=list)
    """Folders (relative to the root, '' for all of it) walked whole: a module stored under one of
    them whose file is gone was deleted. A file named alone is its own entry."""


@dataclass
class FoundCode:
    repos: dict[Path, RepoFiles] = field(default_factory=dict)
    too_large: list[tuple[str, int]] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(path as given, why it was not read)."""

    def repo(self, root: Path) -> RepoFiles:
        return self.repos.setdefault(root, RepoFiles(root))


def find_code(
    paths: list[str],
    *,
    max_file_bytes: int | None,
    files_root: FilesRoot | None = None,
    known: frozenset[Path] = frozenset(),
) -> FoundCode:
    """The source files under `paths`, by repository; `known` are roots of repositories ingested
    before, so a folder inside one is part of it whether or not a `.git` marks the root."""
    found = FoundCode()
    for given in paths:
        try:
            if files_root is None:
                _find_on_disk(given, found, max_file_bytes, known)
            else:
                _find_under_root(given, found, max_file_bytes, files_root, known)
        except EvigraphError as exc:
            found.failures.append((given, f"{exc.message} ({exc.hint})" if exc.hint else exc.message))
    if sum(len(r.files) for r in found.repos.values()) > MAX_CODE_FILES:
        raise InputError(f"more than {MAX_CODE_FILES} source files were named", "ingest a smaller folder per call")
    return found


def _find_on_disk(given: str, found: FoundCode, max_file_bytes: int | None, known: frozenset[Path]) -> None:
    path = Path(given).expanduser()
    if not path.exists():
        raise InputError(f"{given} does not exist", "check the path; folders are walked for source files")
    real = Path(os.path.realpath(path))
    root = repo_root(real if real.is_dir() else real.parent, None, known)
    repo = found.repo(root)
    if real.is_dir():
        repo.walked.append(_rel(real, root))
        for f in walk_files(real, CODE_EXTENSIONS, max_entries=MAX_WALK_ENTRIES):
            if not f.link and not generated(Path(f.path).relative_to(real).as_posix()):
                _add(found, repo, Path(f.path), str(f.path), "", max_file_bytes)
        return
    if language_of(real.name) is None:
        raise InputError(f"{given} is not a source file code ingest reads", f"name files ending {_extensions()}")
    repo.walked.append(_rel(real, root))
    _add(found, repo, real, str(real), "", max_file_bytes)


def _find_under_root(
    given: str, found: FoundCode, max_file_bytes: int | None, files_root: FilesRoot, known: frozenset[Path]
) -> None:
    code_root = FilesRoot(files_root.root, extensions=CODE_EXTENSIONS, max_bytes=None)
    named = files_root.relative(given)
    matched = code_root.expand([given], limit=MAX_CODE_FILES)
    base = files_root.root / named
    folder = base if base.is_dir() and not base.is_symlink() else base.parent
    root = repo_root(Path(os.path.realpath(folder)), files_root.root, known)
    repo = found.repo(root)
    if base.is_dir() or base.is_file():
        repo.walked.append(_rel(Path(os.path.realpath(base)), root))
    for rel in matched:
        absolute = files_root.root / rel
        if language_of(rel) is None or not absolute.is_relative_to(root):
            continue
        if base.is_dir() and generated(absolute.relative_to(base).as_posix()):
            continue
        _add(found, repo, absolute, rel, rel, max_file_bytes)


def generated(walked: str) -> bool:
    """Whether a file found by walking a folder (its path below that folder) is vendored,
    built or minified code."""
    *folders, name = walked.split("/")
    return name.endswith(MINIFIED_SUFFIXES) or any(f in GENERATED_DIRS for f in folders)


def _add(found: FoundCode, repo: RepoFiles, path: Path, shown: str, read_as: str, max_file_bytes: int | None) -> None:
    language = language_of(path.name)
    if language is None:
        return
    try:
        size = path.stat().st_size
    except OSError as exc:
        found.failures.append((shown, f"cannot be read: {exc.strerror or exc}"))
        return
    if max_file_bytes is not None and size > max_file_bytes:
        found.too_large.append((shown, size))
        return
    repo.files.append(CodeFile(repo.root, _rel(path, repo.root), language, size, shown, read_as))


def _rel(path: Path, root: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel


def _extensions() -> str:
    return ", ".join(sorted(CODE_EXTENSIONS))


def repo_root(folder: Path, ceiling: Path | None, known: frozenset[Path] = frozenset()) -> Path:
    """The nearest folder at or above `folder` that is a `known` root or holds `.git`, not above
    `ceiling`; else `folder`."""
    current = folder
    while True:
        if current in known or (current / ".git").exists():
            return current
        if current == ceiling or current.parent == current:
            return folder
        current = current.parent


def read_source(file: CodeFile, max_file_bytes: int | None, files_root: FilesRoot | None) -> bytes:
    if files_root is not None:
        return files_root.read_bytes(file.read_as, max_bytes=max_file_bytes)
    return (file.root / file.rel).read_bytes()


def module_name(file: CodeFile, ceiling: Path | None) -> tuple[str, str]:
    """(the module's name as imports spell it, the package relative imports start from)."""
    if file.language == "python":
        return _python_module(file.root / file.rel, ceiling)
    if file.language == "go":
        return _go_package(file), ""
    if file.language == "rust":
        return rust_module(file.rel), ""
    if file.language == "java":
        return posixpath.splitext(posixpath.basename(file.rel))[0], ""  # the parser adds the package
    return script_module(file.rel), ""


def _python_module(path: Path, ceiling: Path | None) -> tuple[str, str]:
    """Dotted name from the package folders above the file: those with `__init__.py`, and a folder
    without one inside such a package (a namespace package, as `evigraph/mcp` is)."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (
        ((folder / "__init__.py").exists() or (folder.parent / "__init__.py").exists())
        and folder != ceiling
        and folder.parent != folder
    ):
        parts.insert(0, folder.name)
        folder = folder.parent
    name = ".".join(parts) or path.parent.name
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    return name, package


def _go_package(file: CodeFile) -> str:
    """The import path of the file's package: the nearest `go.mod`'s module path and the folder."""
    folder = posixpath.dirname(file.rel)
    probe = folder
    while True:
        mod = file.root / probe / "go.mod" if probe else file.root / "go.mod"
        if mod.is_file() and not mod.is_symlink():
            module = _go_module_path(mod)
            if module:
                rest = folder[len(probe) :].strip("/")
                return f"{module}/{rest}" if rest else module
        if not probe:
            return folder or "main"
        probe = posixpath.dirname(probe)


def _go_module_path(mod: Path) -> str:
    try:
        for line in mod.read_text("utf-8", "replace").splitlines():
            if line.startswith("module "):
                return line.split(None, 1)[1].strip().strip('"')
    except OSError:
        return ""
    return ""
