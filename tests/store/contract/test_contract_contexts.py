"""A passage's context (`TextChunk.context`): searched and counted with its passage, read back
beside its text, never part of it."""

from __future__ import annotations

from tests.store.contract.conftest import ALPHA, covers

from evigraph.models import DocumentVersion, TextChunk
from evigraph.store import GraphStore

CONTEXT = "The Zanzibar expedition's first meeting."


def _with_context() -> DocumentVersion:
    first, *rest = ALPHA.chunks
    return ALPHA.model_copy(update={"chunks": (first.model_copy(update={"context": CONTEXT}), *rest)})


@covers(
    "write_versions", "search_passages", "term_counts", "document_passages", "passages_by_ids", "pending_embeddings"
)
async def test_a_context_is_searched_with_its_passage_but_is_not_its_text(store: GraphStore) -> None:
    await store.write_versions([_with_context()])
    [hit] = await store.search_passages("Zanzibar expedition")
    assert hit.text == ALPHA.chunks[0].text and hit.context == CONTEXT
    assert "Zanzibar" not in hit.model_dump_json()  # results never carry it
    assert (await store.term_counts(["zanzibar"])).counts == {"zanzibar": 1}
    chunks = await store.document_passages(ALPHA.key)
    assert [c.context for c in chunks] == [CONTEXT, ""]
    assert [c.context for c in await store.passages_by_ids([chunks[0].id])] == [CONTEXT]
    pending = dict(await store.pending_embeddings())
    assert pending[chunks[0].id] == f"{ALPHA.title}\n{CONTEXT}\n{ALPHA.chunks[0].text}"
    assert pending[chunks[1].id] == f"{ALPHA.title}\n{ALPHA.chunks[1].text}"


def test_a_chunk_without_a_context_is_as_before() -> None:
    assert TextChunk(index=0, text="x", start=0, end=1).context == ""
