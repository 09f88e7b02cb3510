"""The knowledge base's edits that are not ingest: removing a document, an agent's entities and
relations with their declared properties, and the integrity check. Kept apart from `writes`, the
ingest pipeline's home, so each module stays one job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.errors import NotFoundError
from evigraph.integrity_records import IntegrityReport
from evigraph.kb.keys import KeyOps
from evigraph.kb.properties import (
    check_ontology,
    entity_writes,
    make_columns,
    redirected,
    relation_writes,
    write_values,
)
from evigraph.models import ExtractedEntity, ExtractedRelation, SourceRecord, SourceState

REVIEW_STEP = 20
"""Flagged decisions whose dependents a document write examines before returning: the flags reach
the common case's dependents at once, and `continue_decision_review` finishes a long chain."""


class EditOps(KeyOps):
    async def delete_document(self, key: str, *, missing_ok: bool = False) -> bool:
        """Remove a document, its passages and the entities only it mentioned.

        A key that names no document raises `NotFoundError` (a mistyped key returned False, and
        scripts went on as if the document were gone); with `missing_ok` it returns False instead.
        """
        store = await self._open(for_write=True, create=False)
        async with self._gate.exclusive():
            deleted = await store.delete_document(key)
            if deleted:
                await store.log_sources([SourceRecord(key=key, state=SourceState.deleted)])
                await store.continue_decision_review(None, REVIEW_STEP)
        if not deleted and not missing_ok:
            raise NotFoundError(
                f"no document with key {key!r}",
                hint="list the keys with `evigraph status --documents` (kb.documents()); a file's key is "
                "`file:` + its root folder's name + its path under it (`kb.file_key(path)`)",
            )
        return deleted

    async def delete(self, key: str, *, missing_ok: bool = False) -> bool:
        """`delete_document` under its old name, kept for one release."""
        return await self.delete_document(key, missing_ok=missing_ok)

    async def check(self, repair: bool = False) -> IntegrityReport:
        """Look for damage a crash or an engine fault left (ghost edges, orphans, stray passages).

        With `repair` it fixes what it can and says what is left (`report.remaining`).
        """
        store = await self._open(for_write=repair, create=False)
        if not repair:
            return await store.check()
        async with self._gate.exclusive():
            return await store.check(repair=True)

    async def upsert_entities(
        self,
        entities: Sequence[ExtractedEntity],
        source: str = "agent",
        properties: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        property_source: str | None = None,
    ) -> None:
        """Record entities (idempotent): new ones are created with `source` as provenance, known ones merged.

        `properties` maps an entity's id to values of the properties its type declares (None
        removes one); they are checked before anything is written (`InputError` names the
        property and the fix), `property_source` (default `source`) is recorded as who set each,
        and properties not named keep their values.
        """
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            ontology = await self.load_ontology()
            values = entity_writes(ontology, entities, properties or {})
            if values:
                await make_columns(store, check_ontology(ontology))
            await store.upsert_entities(entities, source)
            if values:
                await write_values(store, await redirected(store, values), property_source or source)

    async def upsert_relations(
        self,
        relations: Sequence[tuple[ExtractedRelation, Sequence[str]]],
        source: str = "agent",
        properties: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        property_source: str | None = None,
    ) -> None:
        """Record relations between existing entities, each with the chunk ids that support it;
        `properties` maps a relation's id to its declared properties, as for `upsert_entities`."""
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            ontology = await self.load_ontology()
            values = relation_writes(ontology, [r for r, _ in relations], properties or {})
            if values:
                await make_columns(store, check_ontology(ontology))
            await store.upsert_relations(relations, source)
            if values:
                await write_values(
                    store, await redirected(store, values, [r for r, _ in relations]), property_source or source
                )
