"""Turning what the user names (files, folders, globs) into files to ingest, and files into keys.

The key rule: a document read from a file is keyed `file:` + the file's absolute, resolved POSIX
path (`file:/home/me/notes/a.md`), however it was named: a relative path on the command line, a
link, or a path under an agent's files root. So the same file ingested by `evigraph ingest`
and by the `ingest` tool is one document, and re-ingesting it from anywhere finds it again.
Documents given as text, and the records of a record file (JSONL), keep the key they were given.

One walker (`walk_files`) lists a folder for both the command line and an agent's files root,
so both pick up the same files: those whose extension a loader claims, skipping hidden entries
and dependency folders, never entering a linked folder.

A bad argument never stops the batch: it becomes a failure that names the fix, and the other
sources still ingest. So does a file whose name is not UTF-8 (bytes such as 0xff, common on
disks written by old systems): Python hands such names over with lone surrogates, which no
key, report or JSON answer can hold, so the file is reported with its bytes escaped.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evigraph.errors import InputError
from evigraph.surrogates import escaped, surrogate_at

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})
FILE_KEY_PREFIX = "file:"


@dataclass(frozen=True)
class SourceFile:
    path: Path
    key: str


@dataclass(frozen=True)
class SourceFailure:
    source: str
    error: str


@dataclass(frozen=True)
class WalkedFile:
    """A file a folder walk found: its path under the walked folder and whether it is a link."""

    rel: str
    """POSIX path relative to the walked folder, as walked (a link is not resolved)."""
    path: Path
    link: bool
    """A symbolic link to a file: where it leads is for the caller to accept or refuse."""


def file_key(path: Path) -> str:
    """Key of a file-backed document: `file:` + its absolute resolved path (see the module docstring)."""
    return FILE_KEY_PREFIX + path.resolve().as_posix()


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


def expand_sources(
    sources: Sequence[str | os.PathLike[str]], extensions: Iterable[str]
) -> tuple[list[SourceFile], list[SourceFailure]]:
    """Files named directly are taken whatever their extension; folders and globs yield supported files."""
    exts = {e.lower() for e in extensions}
    files: dict[Path, SourceFile] = {}
    failures: list[SourceFailure] = []

    def add(path: Path) -> None:
        resolved = path.resolve()
        if resolved in files or resolved in refused:
            return
        if surrogate_at(str(resolved)) is not None:
            refused.add(resolved)
            failures.append(SourceFailure(escaped(file_key(resolved)), not_utf8_error(str(resolved))))
            return
        files[resolved] = SourceFile(path=resolved, key=file_key(resolved))

    def walk(folder: Path) -> list[Path]:
        return sorted(f.path for f in walk_files(folder, exts))

    refused: set[Path] = set()
    for raw in sources:
        given = os.fspath(raw)
        path = Path(given).expanduser()
        text = escaped(given)  # for messages and failure keys
        try:
            if path.is_file():
                add(path)
            elif path.is_dir():
                found = walk(path)
                if not found:
                    failures.append(
                        SourceFailure(
                            text,
                            f"no supported files in folder {text} (supported: {', '.join(sorted(exts))}); "
                            "name files of another type directly to ingest them as text",
                        )
                    )
                for f in found:
                    add(f)
            elif glob.has_magic(given):
                matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(given), recursive=True))
                matched = [m for m in matches if m.is_file() and m.suffix.lower() in exts]
                for d in (m for m in matches if m.is_dir()):
                    matched.extend(walk(d))
                if not matched:
                    failures.append(SourceFailure(text, f"no supported files match {text}; check the pattern"))
                for f in matched:
                    add(f)
            elif path.exists():
                failures.append(SourceFailure(text, f"{text} is not a regular file or folder; name a file or folder"))
            else:
                failures.append(SourceFailure(text, f"no such file or folder: {text}; check the path"))
        except InputError as exc:  # a folder that cannot be listed fails alone
            failures.append(SourceFailure(text, escaped(str(exc))))
    return sorted(files.values(), key=lambda s: s.path), failures
