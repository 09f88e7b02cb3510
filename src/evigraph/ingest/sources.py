"""Turning what the user names (files, folders, globs) into files to ingest, and files into keys.

The key rule: a document read from a file is keyed `file:` + its root's name + its resolved path
under that root (`file:notes/a.md` for `~/notes/a.md`, see `evigraph.ingest.roots`), however it
was named: a relative path on the command line, a link, or a path under an agent's files root.
So the same file ingested by `evigraph ingest` and by the `ingest` tool is one document, and
re-ingesting it from anywhere, or after its folder moved, finds it again.
Documents given as text, and the records of a record file (JSONL), keep the key they were given.

One walker (`walk_files`) lists a folder for both the command line and an agent's files root,
so both pick up the same files: those whose extension a loader claims, skipping hidden entries
and dependency folders, never entering a linked folder.

Nothing a walk or a glob passes over is silent: files whose type no loader reads are counted by
extension (`Collected.skipped`) for the ingest report, and files the user's `--include` /
`--exclude` globs leave out are counted apart (`Collected.excluded`), since those were a choice.
Hidden entries and dependency folders are not counted: leaving them out is the documented rule,
and a `.git` folder alone would drown the count.

A bad argument never stops the batch: it becomes a failure that names the fix, and the other
sources still ingest. So does a file whose name is not UTF-8 (bytes such as 0xff, common on
disks written by old systems): Python hands such names over with lone surrogates, which no
key, report or JSON answer can hold, so the file is reported with its bytes escaped.
"""

from __future__ import annotations

import glob
import os
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from evigraph.errors import InputError
from evigraph.ingest.roots import FILE_KEY_PREFIX as FILE_KEY_PREFIX
from evigraph.ingest.roots import DocumentRoots, active_roots, legacy_key
from evigraph.surrogates import escaped, surrogate_at

_OTHER_TYPES = "name files of another type directly to ingest them as text"
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})


@dataclass(frozen=True)
class SourceFile:
    path: Path
    key: str


@dataclass(frozen=True)
class SourceFailure:
    source: str
    error: str
    given: str = ""
    """What was named (a path, folder or glob), so that expanding it again fails it again."""


@dataclass(frozen=True)
class WalkedFile:
    """A file a folder walk found: its path under the walked folder and whether it is a link."""

    rel: str
    """POSIX path relative to the walked folder, as walked (a link is not resolved)."""
    path: Path
    link: bool
    """A symbolic link to a file: where it leads is for the caller to accept or refuse."""


def file_key(path: Path, roots: DocumentRoots | None = None, *, resolve: bool = True) -> str:
    """Key of a file-backed document: `file:` + its root's name + its path under the root
    (`evigraph.ingest.roots`), under `roots` or else the roots the knowledge base made active for
    this ingest; outside every root (or with none, a bare pipeline), `file:` + its absolute path.
    `resolve=False` keys a link by its own place, for a link whose target is refused."""
    where = path.resolve() if resolve else path
    roots = roots if roots is not None else active_roots()
    key = roots.key(where) if roots is not None else None
    return key or legacy_key(where)


def not_utf8_error(name: str) -> str:
    """Why a file whose name is not UTF-8 is not ingested, and the fix."""
    return (
        f"{escaped(name)}: the file name is not valid UTF-8, so it cannot be stored or cited; "
        "rename it to a UTF-8 name (e.g. `convmv -f latin1 -t utf8 --notest FILE`)"
    )


def walk_files(
    top: Path,
    extensions: Collection[str] | None,
    *,
    max_entries: int | None = None,
    too_many_hint: str = "name a smaller folder",
) -> list[WalkedFile]:
    """The files below `top` a folder walk picks up, in no particular order.

    `extensions` (lower case, with the dot) filters by the walked name; None keeps every file.
    Hidden entries and dependency folders (`SKIPPED_DIRS`) are skipped and linked folders never
    entered, since they can loop or lead anywhere. Past `max_entries` entries seen the walk
    stops with an `InputError`, so a badly chosen folder fails with a hint instead of hanging.
    """
    exts = None if extensions is None else {e.lower() for e in extensions}
    found: list[WalkedFile] = []
    seen = 0
    stack = [""]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(top / folder if folder else top) as entries:
                for entry in entries:
                    seen += 1
                    if max_entries is not None and seen > max_entries:
                        raise InputError(f"{top} holds more than {max_entries} entries; listing stopped", too_many_hint)
                    if entry.name.startswith("."):
                        continue
                    rel = f"{folder}/{entry.name}" if folder else entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED_DIRS:
                                stack.append(rel)
                            continue
                        if exts is not None and os.path.splitext(entry.name)[1].lower() not in exts:
                            continue
                        if entry.is_file(follow_symlinks=False):
                            found.append(WalkedFile(rel, Path(entry.path), link=False))
                        elif entry.is_symlink() and os.path.isfile(entry.path):
                            found.append(WalkedFile(rel, Path(entry.path), link=True))
                    except OSError:  # vanished or unreadable while listed: skip it, keep walking
                        continue
        except OSError as exc:
            if not folder:
                raise InputError(
                    f"{top} cannot be listed: {exc.strerror or exc}", "check the folder exists and is readable"
                ) from exc
    return found


@dataclass(frozen=True)
class FileFilter:
    """The user's include and exclude globs, applied to every file an ingest would read.

    A glob matches a file when it matches the file's name or the name of a folder it is in
    (`*.py`, `drafts`), or, when it holds a `/`, the file's path or a leading part of it
    (`api/v1`, `docs/*/old/*`). Paths are relative to the folder walked; for a file or a glob
    named directly they are the path as given, and a glob starting with `/` is matched against
    the absolute path. `*` crosses folders, as in the ingest tool's plan rules; a leading `**/`
    also matches at the top. Matching is case-sensitive. A file is taken when it matches an
    include glob (or none is given) and no exclude glob.

    Files named directly are filtered too, because a shell expands `docs/*` into names before
    evigraph sees them.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, include: str | Iterable[str] = (), exclude: str | Iterable[str] = ()) -> FileFilter:
        """Globs given as one string or many, each possibly comma-separated (`"*.md,*.txt"`)."""
        return cls(_split_globs(include), _split_globs(exclude))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def admits(self, rel: str, absolute: str) -> bool:
        if self.include and not any(_glob_matches(g, rel, absolute) for g in self.include):
            return False
        return not any(_glob_matches(g, rel, absolute) for g in self.exclude)


def _split_globs(globs: str | Iterable[str]) -> tuple[str, ...]:
    items = [globs] if isinstance(globs, str) else list(globs)
    out = [part.strip() for item in items for part in item.split(",")]
    return tuple(dict.fromkeys(g for g in out if g))


def _glob_matches(pattern: str, rel: str, absolute: str) -> bool:
    pattern = pattern.removeprefix("./").rstrip("/") or "/"
    target = absolute if pattern.startswith("/") else rel.removeprefix("./")
    parts = target.split("/")
    if "/" not in pattern:
        return any(fnmatchcase(part, pattern) for part in parts)
    prefixes = ("/".join(parts[:i]) for i in range(len(parts), 0, -1))
    if any(fnmatchcase(prefix, pattern) for prefix in prefixes):
        return True
    return pattern.startswith("**/") and _glob_matches(pattern[3:], rel, absolute)


@dataclass
class Collected:
    """What the named sources hold: files to ingest, failures, and what was passed over."""

    files: list[SourceFile] = field(default_factory=list)
    failures: list[SourceFailure] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    """Files no loader reads, by lower-case extension with its dot ("" for none), each counted once."""
    excluded: int = 0
    """Files the include and exclude globs left out, each counted once."""

    def skipped_by_extension(self) -> dict[str, int]:
        """`skipped`, most common first, ties by extension, as reports show it."""
        return dict(sorted(self.skipped.items(), key=lambda item: (-item[1], item[0])))


def expand_sources(
    sources: Sequence[str | os.PathLike[str]], extensions: Iterable[str]
) -> tuple[list[SourceFile], list[SourceFailure]]:
    """Files named directly are taken whatever their extension; folders and globs yield supported files."""
    found = collect_sources(sources, extensions)
    return found.files, found.failures


def collect_sources(
    sources: Sequence[str | os.PathLike[str]],
    extensions: Iterable[str],
    select: FileFilter | None = None,
) -> Collected:
    """`expand_sources`, filtered by `select`, also counting what was skipped by type and excluded.

    A folder or glob fails when it holds no file of a supported type, as without `select`, and
    its error says what it holds instead; one whose supported files the globs all left out does
    not fail: the user chose that, and the report counts them as excluded.
    """
    return _Collector({e.lower() for e in extensions}, select or FileFilter()).collect(sources)


class _Collector:
    def __init__(self, extensions: set[str], select: FileFilter) -> None:
        self.exts = extensions
        self.select = select
        self.files: dict[Path, SourceFile] = {}
        self.refused: set[Path] = set()
        self.failures: list[SourceFailure] = []
        self.passed: dict[str, str | None] = {}  # absolute path -> extension skipped, or None when excluded
        self.supported_excluded = 0  # in the current source: files a loader reads that the globs left out

    def collect(self, sources: Sequence[str | os.PathLike[str]]) -> Collected:
        for raw in sources:
            self.source(os.fspath(raw))
        out = Collected(files=sorted(self.files.values(), key=lambda s: s.path), failures=self.failures)
        taken = {os.path.abspath(f) for f in self.files}
        for absolute, ext in self.passed.items():
            if absolute in taken:
                continue  # passed over in one source, named in another: it was ingested
            if ext is None:
                out.excluded += 1
            else:
                out.skipped[ext] += 1
        return out

    def source(self, given: str) -> None:
        path = Path(given).expanduser()
        text = escaped(given)  # for messages and failure keys
        before, self.supported_excluded = len(self.passed), 0
        try:
            if path.is_file():
                if self.admitted(path, Path(given).as_posix(), by_type=False):
                    self.add(path)
            elif path.is_dir():
                found = self.walk(path)
                if not found and not self.supported_excluded:
                    self.fail(given, self.nothing(f"no supported files in folder {text}", before, _OTHER_TYPES))
                for f in found:
                    self.add(f)
            elif glob.has_magic(given):
                matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(given), recursive=True))
                matched = [m for m in matches if m.is_file() and self.admitted(m, m.as_posix(), by_type=True)]
                for d in (m for m in matches if m.is_dir()):
                    matched.extend(self.walk(d))
                if not matched and not self.supported_excluded:
                    self.fail(given, self.nothing(f"no supported files match {text}", before, "check the pattern"))
                for f in matched:
                    self.add(f)
            elif path.exists():
                self.fail(given, f"{text} is not a regular file or folder; name a file or folder")
            else:
                self.fail(given, f"no such file or folder: {text}; check the path")
        except InputError as exc:  # a folder that cannot be listed fails alone
            self.fail(given, escaped(str(exc)))

    def fail(self, given: str, error: str) -> None:
        self.failures.append(SourceFailure(escaped(given), error, given))

    def add(self, path: Path) -> None:
        resolved = path.resolve()
        if resolved in self.files or resolved in self.refused:
            return
        if surrogate_at(str(resolved)) is not None:
            self.refused.add(resolved)
            error = not_utf8_error(str(resolved))
            self.failures.append(SourceFailure(escaped(file_key(resolved)), error, str(resolved)))
            return
        self.files[resolved] = SourceFile(path=resolved, key=file_key(resolved))

    def admitted(self, path: Path, rel: str, *, by_type: bool) -> bool:
        """Whether to take `path`; one not taken is counted once, as excluded or by its type."""
        absolute = os.path.abspath(path)
        ext = os.path.splitext(path.name)[1].lower()
        supported = not by_type or ext in self.exts
        if not self.select.admits(rel, absolute):
            self.passed.setdefault(absolute, None)
            self.supported_excluded += supported
            return False
        if not supported:
            self.passed.setdefault(absolute, escaped(ext))  # a report can hold no lone surrogate
        return supported

    def walk(self, folder: Path) -> list[Path]:
        return sorted(f.path for f in walk_files(folder, None) if self.admitted(f.path, f.rel, by_type=True))

    def nothing(self, what: str, before: int, fix: str) -> str:
        """Why a folder or glob gave no file: what it holds instead, and the fix."""
        held = list(self.passed.values())[before:]
        kinds = Counter(ext for ext in held if ext is not None)
        said = []
        if kinds:
            said.append(f"{sum(kinds.values())} of types no loader reads ({describe_extensions(kinds)})")
        if excluded := held.count(None):
            said.append(f"{excluded} excluded by the include/exclude globs")
        held_text = f": it holds {' and '.join(said)}" if said else ""
        return f"{what}{held_text} (supported: {', '.join(sorted(self.exts))}); {fix}"


def describe_extensions(counts: Counter[str] | dict[str, int], limit: int = 8) -> str:
    """`.py 120, .yml 40, (no extension) 3`, most first, the rest summed as `+N more types`."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{ext or '(no extension)'} {n}" for ext, n in ranked[:limit])
    rest = ranked[limit:]
    return shown + (f", +{len(rest)} more types ({sum(n for _, n in rest)} files)" if rest else "")
