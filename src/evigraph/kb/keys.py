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

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from evigraph.errors import InputError
from evigraph.ingest.roots import (
    FILE_KEY_PREFIX,
    ROOTS_SETTING,
    DocumentRoots,
    Placed,
    check_root_name,
    is_legacy_key,
    legacy_key,
)
from evigraph.kb.core import KnowledgeBaseCore
from evigraph.store.base import GraphStore


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
        resolved = Path(path).expanduser().resolve()
        store = await self._open(for_write=False)
        return (await _roots(store)).key(resolved) or legacy_key(resolved)

    async def _place_roots(self, folders: Iterable[tuple[Path, str | None]]) -> tuple[DocumentRoots, Placed]:
        store = await self._open(for_write=True)
        roots, placed = await _roots(store), Placed()
        for folder, name in folders:
            roots.place(folder, name, placed)
        if roots.changed:
            await store.set_setting(ROOTS_SETTING, roots.dump())
        return roots, placed

    async def root_for(self, folder: Path, name: str | None = None) -> DocumentRoots:
        """The roots with `folder` placed among them (an agent's files root); refused as at ingest."""
        roots, placed = await self._place_roots([(folder, name)])
        if placed.refused:
            raise InputError(*_split(placed.refused[folder]))
        return roots

    async def _adopt_legacy(self, roots: DocumentRoots, files: Sequence[Path]) -> int:
        """Rename the absolute-path keys of `files` to their root's form, where stored and free."""
        renames = {legacy_key(p): k for p in files if (k := roots.key(p.resolve())) is not None}
        if not renames:
            return 0
        store = await self._open(for_write=True)
        old = await _stored(store, list(renames))
        new = await _stored(store, [renames[k] for k in old])
        pairs = {k: renames[k] for k in old if renames[k] not in new}  # both stored: the new one stands
        return len(await store.rename_documents(pairs)) if pairs else 0

    async def migrate_keys(self, folders: Sequence[str] = ()) -> KeyMigration:
        """Rename documents keyed by absolute path under each folder (`FOLDER` or `NAME=FOLDER`,
        the folder as the keys spell it, which may no longer exist) to `file:NAME/...`.

        Without folders, nothing changes and the report lists the folders still holding such keys.
        A folder under which no key lies, or a new key another document holds, is refused with
        the fix and nothing is renamed.
        """
        store = await self._open(for_write=bool(folders))
        legacy = await _legacy_keys(store)
        out = KeyMigration()
        if not folders:
            out.legacy = dict(Counter(k[len(FILE_KEY_PREFIX) :].rsplit("/", 1)[0] for k in legacy).most_common())
            return out
        asked: list[tuple[Path, str | None]] = []
        for spec in folders:
            name, sep, folder = spec.rpartition("=") if "=" in spec else ("", "", spec)
            at = Path(os.path.abspath(os.path.expanduser(folder)))
            if not any(k.startswith(f"{FILE_KEY_PREFIX}{at.as_posix()}/") for k in legacy):
                raise InputError(
                    f"no document is keyed under {at.as_posix()}; nothing was renamed",
                    "run `evigraph migrate` without arguments to list the folders holding absolute keys",
                )
            asked.append((at.resolve() if at.is_dir() else at, check_root_name(name) if sep else None))
        roots = await _roots(store)
        renames: dict[str, str] = {}
        for at, given in asked:
            name = check_root_name(given or at.name or "root")
            was = roots.folders.get(name)
            if was is None:
                roots.folders[name] = at
                out.roots[name] = at.as_posix()
            elif was != at and given is None and was.exists():
                raise InputError(
                    f"{at.as_posix()} would take the name {name!r} of the root at {was}; nothing was renamed",
                    f"name it apart: `evigraph migrate OTHER_NAME={at.as_posix()}`, or `{name}={at.as_posix()}` "
                    "if that root is this folder moved",
                )
            for key in legacy:
                path = Path(key[len(FILE_KEY_PREFIX) :])
                if path.is_relative_to(at) and key not in renames:
                    renames[key] = f"{FILE_KEY_PREFIX}{name}/{path.relative_to(at).as_posix()}"
        renamed = await store.rename_documents(renames)
        if out.roots:
            await store.set_setting(ROOTS_SETTING, roots.dump())
        out.renamed = {k: renames[k] for k in renamed}
        return out


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
