"""Compaction in the store contract: every read answers as before, and the store stays open for writes."""

from __future__ import annotations

from typing import Any

from tests.store.contract.conftest import ADA, ALPHA, BETA, VECTORS, Library, build_library, covers, version

from evigraph.models import SourceRecord, SourceState, ThemeRecord
from evigraph.store import GraphStore

GAMMA = version("team/gamma", ["Alan Turing worked at Bletchley Park."], [[("Alan Turing", "Person")]])


async def everything(library: Library) -> dict[str, Any]:
    """What the reads of the contract return, in a comparable form."""
    store = library.store
    return {
        "counts": (await store.counts()).model_dump(),
        "documents": [d.model_dump() for d in await store.list_documents()],
        "search": [h.model_dump() for h in await store.search_passages("Babbage engine")],
        "entities": [h.model_dump() for h in await store.search_entities("Ada")],
        "passages": [h.model_dump() for h in await store.document_passages(ALPHA.key)],
        "vectors": await store.vector_search(VECTORS[0], limit=5),
        "neighbours": [n.model_dump() for n in await store.neighbours([ADA], hops=2)],
        "model": await store.embedding_model(),
        "pending": await store.pending_embeddings(),
        "themes": await store.themes(),
        "setting": await store.get_setting("contract"),
        "log": await store.source_log([BETA.key]),
    }


@covers("compact")
async def test_compact_keeps_what_every_read_returns(store: GraphStore) -> None:
    library = await build_library(store)
    await store.replace_themes([ThemeRecord(id="t1", members=[ADA], names=["Ada Lovelace"], labels=["Person"], size=1)])
    await store.set_setting("contract", "kept")
    await store.log_sources([SourceRecord(key=BETA.key, state=SourceState.current, content_hash="h", version=1)])
    await store.write_versions([GAMMA])
    assert await store.delete_document(GAMMA.key)  # space for a compaction to give back
    before = await everything(library)

    report = await store.compact()
    assert report.bytes_before > 0 and report.bytes_after <= report.bytes_before
    assert report.replaced == (report.bytes_after < report.bytes_before)
    assert await everything(library) == before

    [again] = await store.write_versions([GAMMA])  # still open, and writable
    # The deleted version's number travelled with the copy: it is never given again.
    assert again.version == 2 and (await store.counts()).documents == 3
