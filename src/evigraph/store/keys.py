"""The store contract's section for document keys, apart from `base` so that module stays one
size: renaming stored documents when their keys change form (`kb/keys.py`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping


class KeyStore(ABC):
    @abstractmethod
    async def rename_documents(self, renames: Mapping[str, str]) -> list[str]:
        """Give stored documents new keys, keeping their passages, vectors and graph; the old keys renamed.

        For keys that change form (a folder moved, or keys made relative to a root): re-ingesting
        would embed and extract again and leave the old documents behind. Every place that names
        a key follows it (passages, source log, version counter, decision and step supports,
        review causes); passage ids stay, so evidence cited before the rename still resolves. A
        key not stored is skipped. A new key already another document's refuses the whole rename
        (`InputError`), so nothing changes.
        """

    @abstractmethod
    async def holds_legacy_keys(self) -> bool:
        """Whether any document or source-log row, in the whole knowledge base, is keyed by absolute
        path (`file:/...`, `file:C:/...`): an ingest looks its files up under such keys only then,
        as most knowledge bases never had one."""
