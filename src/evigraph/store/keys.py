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

    async def holds_legacy_keys(self) -> bool:
        """Whether a document or source-log row is keyed by absolute path (`file:/...`, `file:C:/...`).

        So an ingest renames such keys only in a knowledge base that has them: most never had any.
        """
        return True
