"""Reading named files into documents, each under its one key, before an ingest with per-file plans.

A file is read either from the disk as the command line does, or through an agent's
`FilesRoot`, whose reads open each folder without following links so that what was checked is
what gets read. Either way its key is `file:` + its root's name + its path under it (see `roots`), and
a file that cannot be read becomes a failed outcome naming the fix, never an exception that
would cost the other files of the call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evigraph.errors import EvigraphError
from evigraph.ingest.loaders.base import LoaderStrategy, RejectedRecord
from evigraph.ingest.sources import file_key, not_utf8_error
from evigraph.models import DocumentOutcome, IngestStatus, LoadedDocument
from evigraph.surrogates import escaped, surrogate_at

if TYPE_CHECKING:
    from evigraph.ingest.files_root import FilesRoot

log = logging.getLogger(__name__)

LoaderPicker = Callable[[Path], LoaderStrategy]


@dataclass
class LoadedFile:
    """One named file: its documents (one, or a record file's many) and what failed in it."""

    given: str
    """The file as the caller named it, so the caller can find its own plan for it."""
    key: str
    path: str
    """What documents and outcomes show: the path under the root, or the absolute path."""
    documents: list[LoadedDocument] = field(default_factory=list)
    failures: list[DocumentOutcome] = field(default_factory=list)

    def fail(self, error: str, *, key: str | None = None, line: int | None = None) -> None:
        self.failures.append(
            DocumentOutcome(key=key or self.key, status=IngestStatus.failed, error=error, path=self.path, line=line)
        )


def load_file(given: str, pick: LoaderPicker, root: FilesRoot | None = None) -> LoadedFile:
    """The documents of the file `given` names (under `root` when there is one)."""
    try:
        loaded, where = _locate(given, root)
    except EvigraphError as exc:  # the path itself was refused: no key can be made from it
        refused = LoadedFile(given, escaped(given), escaped(given))
        refused.fail(str(exc))
        return refused
    if surrogate_at(where) is not None:  # a name that is not UTF-8 cannot be stored, cited or sent
        loaded.fail(not_utf8_error(where))
        return loaded
    try:
        if root is not None:
            data = root.read_bytes(where, max_bytes=root.max_bytes)
            items = list(pick(Path(where)).stream_bytes(data, Path(where), loaded.key))
        elif not Path(where).is_file():
            loaded.fail(f"no such file: {loaded.path}; check the path")
            return loaded
        else:
            items = list(pick(Path(where)).stream(Path(where), loaded.key))
    except EvigraphError as exc:
        loaded.fail(str(exc))
        return loaded
    except Exception as exc:  # a user loader's bug must not sink the other files
        log.exception("loader failed on %s", loaded.path)
        loaded.fail(f"could not load {loaded.path}: {exc}")
        return loaded
    for item in items:  # a bad record of a record file fails alone
        if isinstance(item, RejectedRecord):
            loaded.fail(item.error, key=item.key, line=item.line)
        else:
            loaded.documents.append(item.model_copy(update={"path": loaded.path}) if root is not None else item)
    return loaded


def _locate(given: str, root: FilesRoot | None) -> tuple[LoadedFile, str]:
    """The file's key and shown path, and where to read it (its path under the root, or on disk)."""
    if root is not None:
        rel = root.relative(given)
        try:
            key = root.key(rel)
        except EvigraphError:  # a link leading out of the root: the read refuses it, under the name's key
            key = file_key(root.root / rel, resolve=False)
        return LoadedFile(given, escaped(key), escaped(rel)), rel
    path = Path(given).expanduser().resolve()
    return LoadedFile(given, escaped(file_key(path)), escaped(str(path))), str(path)


def load_files(files: Sequence[str], pick: LoaderPicker, root: FilesRoot | None = None) -> list[LoadedFile]:
    return [load_file(f, pick, root) for f in files]
