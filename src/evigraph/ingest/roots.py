"""Document roots: file keys relative to a named folder, so a moved or mounted folder keeps them.

A file's key is `file:` + the name of the root holding it + its path under that root
(`file:docs/notes/a.md`). The knowledge base remembers each root's name and where it was last
seen (the `document_roots` setting). A folder given to ingest becomes a root named after itself
unless it lies inside one already; a file or glob's root is the folder holding it. Keys carry the
name, not the place, so `evigraph ingest /mnt/docs` after `mv ~/docs /mnt/docs` finds every
document unchanged: the root `docs` is re-pointed because its old place is gone. Two different
folders with one name stay distinct: the second is refused, naming `--root NAME` as the fix,
rather than silently mixing their keys. Passing the name of a root that lives elsewhere is how a
user says "this is that folder, moved or mounted here".

Keys made before roots (`file:` + an absolute path) are "legacy"; ingesting their folder renames
them in place (`KnowledgeBase.migrate_keys`), so nothing is embedded or extracted again.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evigraph.errors import InputError

ROOTS_SETTING = "document_roots"
FILE_KEY_PREFIX = "file:"
_LEGACY = re.compile(r"^file:(/|[A-Za-z]:/)")
_BAD_NAME = re.compile(r"[/\\:=\x00-\x1f\x7f]")


def is_legacy_key(key: str) -> bool:
    """A key from before roots: `file:` + an absolute path."""
    return bool(_LEGACY.match(key))


def legacy_key(path: Path) -> str:
    """The key a file had before roots; `path` as the caller has it (resolved, or a link's own place)."""
    return FILE_KEY_PREFIX + path.as_posix()


def is_root_name(name: str) -> bool:
    """Whether `name` can name a root: it is the first part of keys and the left side of `NAME=FOLDER`."""
    return bool(name.strip()) and not name.startswith(".") and not _BAD_NAME.search(name)


def check_root_name(name: str) -> str:
    if not is_root_name(name):
        raise InputError(
            f"{name!r} cannot name a root: a root name is one folder-like word without '/', '\\\\', ':', '=' "
            "or control characters, not blank and not starting with '.'",
            "pass e.g. --root docs",
        )
    return name


@dataclass
class Placed:
    """What placing folders did: roots added or re-pointed (for the report) and folders refused."""

    added: dict[str, Path] = field(default_factory=dict)
    moved: dict[str, tuple[Path, Path]] = field(default_factory=dict)
    refused: dict[Path, str] = field(default_factory=dict)

    def refuses(self, path: Path) -> bool:
        """Whether `path` (resolved) is a refused folder or lies in one: its files take no key."""
        return any(path == f or f in path.parents for f in self.refused)


@dataclass
class DocumentRoots:
    """Root name -> the folder it was last seen at (absolute, resolved)."""

    folders: dict[str, Path] = field(default_factory=dict)
    changed: bool = False

    @classmethod
    def parse(cls, text: str | None) -> DocumentRoots:
        data = json.loads(text) if text else {}
        return cls({str(k): Path(v) for k, v in data.items()} if isinstance(data, dict) else {})

    def dump(self) -> str:
        return json.dumps({k: v.as_posix() for k, v in sorted(self.folders.items())})

    def holding(self, path: Path) -> tuple[str, Path] | None:
        """The deepest root holding `path` (resolved): its name and folder."""
        best: tuple[str, Path] | None = None
        for name, folder in self.folders.items():
            if (path == folder or folder in path.parents) and (best is None or len(folder.parts) > len(best[1].parts)):
                best = (name, folder)
        return best

    def key(self, path: Path) -> str | None:
        """`file:<root>/<path under it>` for a resolved file path, or None outside every root."""
        found = self.holding(path)
        if found is None:
            return None
        return f"{FILE_KEY_PREFIX}{found[0]}/{path.relative_to(found[1]).as_posix()}"

    def path_of(self, key: str) -> Path | None:
        """Where the file a root-relative key names is now, or None for another key."""
        if not key.startswith(FILE_KEY_PREFIX) or is_legacy_key(key):
            return None
        name, _, rel = key[len(FILE_KEY_PREFIX) :].partition("/")
        folder = self.folders.get(name)
        return folder.joinpath(*rel.split("/")) if folder is not None and rel else None

    def place(self, folder: Path, name: str | None, placed: Placed) -> None:
        """Make `folder` (resolved) a root, or find the root holding it; see the module docstring.

        A name claimed for another folder earlier in the same `placed` is refused even when that
        folder is gone (as `migrate_keys` places folders that moved away): two folders of one
        call are never one root.
        """
        inside = self.holding(folder)
        if inside is not None and (name is None or name == inside[0]):
            return
        if inside is not None:
            where = "is" if inside[1] == folder else f"is inside ({inside[1]})"
            placed.refused[folder] = (
                f"{folder} {where} the root {inside[0]!r}, whose keys its files keep; drop --root {name}"
            )
            return
        explicit = name is not None
        if name is not None:
            check_root_name(name)
        else:
            name = folder.name.lstrip(".") or "root"  # a hidden folder's name, as a root may not start with '.'
        if not is_root_name(name):
            placed.refused[folder] = f"{folder}'s name cannot name a root; pass --root NAME (root_name= in Python)"
            return
        was = self.folders.get(name)
        if was is None:
            self.folders[name] = folder
            placed.added[name] = folder
        elif was != folder:
            claimed = name in placed.added or name in placed.moved
            if claimed or (not explicit and was.exists()):
                placed.refused[folder] = (
                    f"{folder} is named {name!r} like the root already at {was}; keys would collide: pass "
                    f"--root OTHER_NAME (root_name= in Python) to keep it apart, or --root {name} if it is "
                    "that folder moved or mounted here"
                )
                return
            self._repoint(name, was, folder)
            placed.moved[name] = (was, folder)
        self.changed = self.changed or was != folder

    def _repoint(self, name: str, was: Path, folder: Path) -> None:
        """Re-point a root and the roots nested in it, which moved with it."""
        for other, at in list(self.folders.items()):
            if other != name and was in at.parents:
                self.folders[other] = folder / at.relative_to(was)
        self.folders[name] = folder


_ACTIVE: contextvars.ContextVar[DocumentRoots | None] = contextvars.ContextVar("document_roots", default=None)


@contextlib.contextmanager
def keyed_by(roots: DocumentRoots) -> Iterator[None]:
    """File keys made inside this block (`sources.file_key`) are relative to `roots`."""
    token = _ACTIVE.set(roots)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_roots() -> DocumentRoots | None:
    return _ACTIVE.get()


def source_folder(given: str) -> Path | None:
    """The folder a named source makes a root: a folder itself, a file's folder, a glob's fixed part."""
    import glob

    path = Path(given).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.is_file():
        return path.resolve().parent
    if glob.has_magic(given):
        fixed: list[str] = []
        for part in Path(os.path.expanduser(given)).parts:
            if glob.has_magic(part):
                break
            fixed.append(part)
        base = Path(*fixed) if fixed else Path(".")
        return base.resolve() if base.is_dir() else None
    return None
