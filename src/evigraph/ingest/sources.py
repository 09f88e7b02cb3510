"""Turning what the user names (files, folders, globs) into files to ingest, and files into keys.

A bad argument never stops the batch: it becomes a failure that names the fix, and the other
sources still ingest. So does a file whose name is not UTF-8 (bytes such as 0xff, common on
disks written by old systems): Python hands such names over with lone surrogates, which no
key, report or JSON answer can hold, so the file is reported with its bytes escaped.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evigraph.surrogates import escaped, surrogate_at

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})


@dataclass(frozen=True)
class SourceFile:
    path: Path
    key: str


@dataclass(frozen=True)
class SourceFailure:
    source: str
    error: str


def file_key(path: Path) -> str:
    """Key of a file-backed document: its absolute path, so re-ingesting it from anywhere matches."""
    return "file:" + path.resolve().as_posix()


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
            failures.append(
                SourceFailure(
                    escaped(file_key(resolved)),
                    f"{escaped(str(resolved))}: the file name is not valid UTF-8, so it cannot be stored or cited; "
                    "rename it to a UTF-8 name (e.g. `convmv -f latin1 -t utf8 --notest FILE`)",
                )
            )
            return
        files[resolved] = SourceFile(path=resolved, key=file_key(resolved))

    refused: set[Path] = set()
    for raw in sources:
        given = os.fspath(raw)
        path = Path(given).expanduser()
        text = escaped(given)  # for messages and failure keys
        if path.is_file():
            add(path)
        elif path.is_dir():
            found = list(_walk(path, exts))
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
                matched.extend(_walk(d, exts))
            if not matched:
                failures.append(SourceFailure(text, f"no supported files match {text}; check the pattern"))
            for f in matched:
                add(f)
        elif path.exists():
            failures.append(SourceFailure(text, f"{text} is not a regular file or folder; name a file or folder"))
        else:
            failures.append(SourceFailure(text, f"no such file or folder: {text}; check the path"))
    return sorted(files.values(), key=lambda s: s.path), failures


def _walk(folder: Path, exts: set[str]) -> Iterable[Path]:
    """Supported files below `folder`, skipping hidden entries and dependency folders."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(names):
            if name.startswith("."):
                continue
            p = Path(root, name)
            if p.suffix.lower() in exts and p.is_file():
                yield p
