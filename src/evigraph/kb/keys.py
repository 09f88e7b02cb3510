"""Document roots and key migration on the knowledge base (the rule is in `evigraph.ingest.roots`).

Roots are placed before an ingest reads a file, so no key is made under a root the knowledge base
has not remembered. Keys from before roots (`file:` + an absolute path) are renamed in place,
never re-ingested: at ingest for the files named, since their root is then known, and by
`migrate_keys` for folders that moved before anyone ingested them again. The rename is explicit
or tied to an ingest of the folder, not done at open: an absolute key does not say which folder
was its root, and keys live outside the knowledge base too (scopes, scripts, an agent's notes),
so a rename is something the user asks for and sees counted.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from evigraph.errors import InputError
from evigraph.ingest.roots import (
    FILE_KEY_PREFIX,
    ROOTS_SETTING,
    DocumentRoots,
    Placed,
    is_legacy_key,
    is_root_name,
    keyed_by,
    legacy_key,
)
from evigraph.kb.core import KnowledgeBaseCore
from evigraph.models import DocumentOutcome, IngestReport, IngestStatus
from evigraph.store.base import GraphStore
from evigraph.surrogates import escaped

if TYPE_CHECKING:
    from evigraph.ingest.progress import IngestProgress
    from evigraph.ingest.sources import Collected


class KeyMigration(BaseModel):
    """What `migrate_keys` did, or, without folders, what is left to migrate."""

    renamed: dict[str, str] = Field(default_factory=dict, description="old key -> new key")
    roots: dict[str, str] = Field(default_factory=dict, description="roots added or re-pointed: name -> folder")
    legacy: dict[str, int] = Field(
        default_factory=dict, description="documents still keyed by absolute path, by the folder holding them"
    )


class KeyOps(KnowledgeBaseCore):
    async def document_roots(self) -> dict[str, str]:
        """Each root's name and the folder it was last seen at."""
        store = await self._open(for_write=False)
        return {k: v.as_posix() for k, v in (await _roots(store)).folders.items()}

    async def file_key(self, path: str | os.PathLike[str]) -> str:
        """The key the file at `path` has, or would have, here: under its root, else its absolute path."""
        from evigraph.ingest.sources import file_key

        store = await self._open(for_write=False)
        return file_key(Path(path).expanduser(), await _roots(store))

    async def _place_roots(
        self, folders: Iterable[tuple[Path, str | None]], files: Iterable[Path] = ()
    ) -> tuple[DocumentRoots, Placed]:
        """Place `folders`, then the folders of `files` outside every root (links leading
        elsewhere) but not in a refused folder, in one read and write of the roots under the gate,
        so a concurrent placement is not lost."""
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            roots, placed = await _roots(store), Placed()
            for folder, name in folders:
                roots.place(folder, name, placed)
            for path in files:
                if roots.key(path) is None and not placed.refuses(path):
                    roots.place(path.parent, None, placed)
            if roots.changed:
                await store.set_setting(ROOTS_SETTING, roots.dump())
        return roots, placed

    async def _roots_of(
        self, named: Sequence[str], files: Sequence[Path], name: str | None = None
    ) -> tuple[DocumentRoots, Placed, list[DocumentOutcome]]:
        """Place the named sources' folders as roots, and the folders of files outside every root
        (links leading elsewhere); each refused folder comes back as a failed outcome, and its
        files (`placed.refuses`) are for the caller to leave out."""
        from evigraph.ingest.roots import source_folder

        folders = {f: name for given in named if (f := source_folder(given)) is not None}
        if name is not None and len(folders) > 1:
            raise InputError(
                f"root_name {name!r} names one folder, but {len(folders)} folders were given",
                "ingest each folder in its own call, each with its own --root (root_name=)",
            )
        roots, placed = await self._place_roots(folders.items(), files)
        refused = [
            DocumentOutcome(key=escaped(str(f)), status=IngestStatus.failed, error=why, path=str(f))
            for f, why in placed.refused.items()
        ]
        return roots, placed, refused

    async def _keyed(
        self,
        ingest: Callable[[list[str]], Awaitable[IngestReport]],
        named: Sequence[str],
        found: Collected | None = None,
        name: str | None = None,
        progress: bool | IngestProgress | None = None,
    ) -> IngestReport:
        """Run `ingest` on the files `named` sources hold (`found`, else collected here), keyed
        under their roots, placed first; legacy keys of those files are renamed, not ingested anew."""
        from evigraph.ingest.progress import IngestProgress
        from evigraph.ingest.sources import FileFilter, collect_sources

        if found is None:
            found = await asyncio.to_thread(collect_sources, named, self.file_extensions, FileFilter.of((), ()))
        roots, placed, refused = await self._roots_of(named, [f.path for f in found.files], name)
        found.files = [f for f in found.files if roots.key(f.path) is not None and not placed.refuses(f.path)]
        if refused and isinstance(progress, IngestProgress):
            progress.finished(refused)
        with keyed_by(roots):
            renamed = await self._adopt_legacy(roots, [f.path for f in found.files])
            # Failed sources are named again so that the run reports them with the rest.
            report = await ingest([*(str(f.path) for f in found.files), *(f.given for f in found.failures)])
        report.documents[:0] = refused
        report.renamed = renamed
        report.roots_moved = {k: new.as_posix() for k, (_, new) in placed.moved.items()}
        return report

    async def root_for(self, folder: Path, name: str | None = None) -> DocumentRoots:
        """The roots with `folder` placed among them (an agent's files root); refused as at ingest."""
        roots, placed = await self._place_roots([(folder, name)])
        if placed.refused:
            raise InputError(*_split(placed.refused[folder]))
        return roots

    async def _adopt_legacy(self, roots: DocumentRoots, files: Sequence[Path]) -> int:
        """Rename the absolute-path keys of `files` to their root's form, where stored and free.

        Skipped after one store query when no absolute key is stored (every knowledge base made
        since roots): looking each file up twice cost seconds per 20,000 files on every ingest.
        """
        if not files:
            return 0
        store = await self._open(for_write=True)
        if not await store.holds_legacy_keys():
            return 0
        renames = {legacy_key(r): k for p in files if (k := roots.key(r := p.resolve())) is not None}
        async with self._gate.exclusive():
            old = await _stored(store, list(renames))
            new = await _stored(store, [renames[k] for k in old])
            pairs = {k: renames[k] for k in old if renames[k] not in new}  # both stored: the new one stands
            return len(await store.rename_documents(pairs)) if pairs else 0

    async def migrate_keys(self, folders: Sequence[str] = ()) -> KeyMigration:
        """Rename documents keyed by absolute path under each folder (`FOLDER` or `NAME=FOLDER`,
        the folder as the keys spell it, which may no longer exist) to `file:NAME/...`.

        Without folders, nothing changes and the report lists the folders still holding such keys.
        A folder under which no key lies, a root name another folder holds, or a new key another
        document holds is refused with the fix and nothing is renamed. Folders are placed as
        ingest places them (`DocumentRoots.place`), so both give a file one key.
        """
        store = await self._open(for_write=bool(folders))
        legacy = await _legacy_keys(store)
        out = KeyMigration()
        if not folders:
            out.legacy = dict(Counter(k[len(FILE_KEY_PREFIX) :].rsplit("/", 1)[0] for k in legacy).most_common())
            return out
        asked = [_migration(spec, legacy) for spec in folders]
        async with self._gate.exclusive():
            roots, placed = await _roots(store), Placed()
            before = dict(roots.folders)
            for at, name in asked:
                roots.place(at, name, placed)
                if at in placed.refused:
                    given = name or at.name
                    raise InputError(
                        f"{placed.refused[at].split(';')[0]}; nothing was renamed",
                        f"name it apart: `evigraph migrate OTHER_NAME={at.as_posix()}`, or `{given}={at.as_posix()}` "
                        "if that root is this folder moved",
                    )
            renames: dict[str, str] = {}
            for key in legacy:
                path = Path(key[len(FILE_KEY_PREFIX) :])
                if any(path.is_relative_to(at) for at, _ in asked) and (new := roots.key(path)) is not None:
                    renames[key] = new
            renamed = await store.rename_documents(renames)
            # A root is not re-pointed to where the keys say it was, while it is still where it is.
            kept = {n: f for n, f in before.items() if f.exists() and not roots.folders[n].exists()}
            after = roots.folders | kept
            if after != before:
                await store.set_setting(ROOTS_SETTING, DocumentRoots(after).dump())
        out.roots = {k: v.as_posix() for k, v in after.items() if before.get(k) != v}
        out.renamed = {k: renames[k] for k in renamed}
        return out


def _migration(spec: str, legacy: Sequence[str]) -> tuple[Path, str | None]:
    """The folder and root name a `migrate` argument names; refused when no legacy key lies under it.

    `NAME=FOLDER` splits at the first '=' only when its left side can name a root, so a folder
    whose path holds '=' (`/data/year=2024`) is migrated whole.
    """
    name, sep, folder = spec.partition("=")
    if not sep or not is_root_name(name):
        name, folder = "", spec
    at = Path(os.path.abspath(os.path.expanduser(folder)))
    if not any(k.startswith(f"{FILE_KEY_PREFIX}{at.as_posix()}/") for k in legacy):
        raise InputError(
            f"no document is keyed under {at.as_posix()}; nothing was renamed",
            "run `evigraph migrate` without arguments to list the folders holding absolute keys",
        )
    return (at.resolve() if at.is_dir() else at), (name or None)


def _split(message: str) -> tuple[str, str]:
    """A refusal as (message, hint): the fix follows the last semicolon."""
    head, _, fix = message.rpartition(";")
    return (head, fix.strip()) if head else (message, "")


async def _roots(store: GraphStore) -> DocumentRoots:
    return DocumentRoots.parse(await store.get_setting(ROOTS_SETTING))


async def _stored(store: GraphStore, keys: list[str]) -> set[str]:
    if not keys:
        return set()
    return {*await store.get_documents(keys), *await store.source_log(keys)}


async def _legacy_keys(store: GraphStore) -> list[str]:
    keys: list[str] = []
    offset = 0
    while docs := await store.list_documents(1000, offset):
        offset += len(docs)
        keys += [d.key for d in docs if is_legacy_key(d.key)]
    keys += [r.key for r in await store.failed_sources(10_000) if is_legacy_key(r.key)]
    return sorted(set(keys))
