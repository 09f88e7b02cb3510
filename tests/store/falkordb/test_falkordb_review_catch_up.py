"""A writer stopped between a document change and the decision flags leaves nothing unflagged:
the next `continue_review` (run after every ingest and delete) catches up."""

from __future__ import annotations

from tests.conftest import FalkorServer
from tests.store.contract.conftest import ALPHA, BETA, version

from evigraph.store import connect
from evigraph.store.falkordb import documents
from evigraph.store.falkordb.store import FalkorStore
from evigraph.trace_records import NewDecision, NewSupport


async def decide(store: FalkorStore, key: str) -> str:
    chunk = (await store.document_passages(key))[0]
    support = NewSupport(kind="passage", ref=f"passage:{chunk.id}", document=key, version=chunk.version)
    made = await store.record_decision(
        "p", "ann", NewDecision(task="t", choice_key=key, conclusion="c", rationale="r", supports=(support,))
    )
    return made.id


async def test_changes_whose_flags_were_never_set_are_flagged_by_the_next_review(
    falkordb_server: FalkorServer,
) -> None:
    async with connect(falkordb_server.url("catch_up")) as opened:
        store = opened
        assert isinstance(store, FalkorStore)
        await store.write_versions([ALPHA, BETA])
        await store.create_task("p", "ann", "t", "g")
        on_alpha, on_beta = await decide(store, ALPHA.key), await decide(store, BETA.key)
        # What a writer killed after the switch and before the flags leaves: a new version of
        # alpha and a deleted beta, neither flagged.
        changed = version(ALPHA.key, ["Ada Lovelace wrote the first program."], [[("Ada Lovelace", "Person")]])
        documents.write_versions(store.conn, [changed])
        documents.delete_document(store.conn, BETA.key)
        assert [d.state for d in await store.get_decisions("p", [on_alpha, on_beta])] == ["active", "active"]

        await store.continue_decision_review("p", 20)
        found = {d.id: d for d in await store.get_decisions("p", [on_alpha, on_beta])}
        assert found[on_alpha].state == found[on_beta].state == "needs_review"
        assert [(c.change, c.now_version) for c in found[on_alpha].review] == [("new_version", 2)]
        assert [(c.change, c.document) for c in found[on_beta].review] == [("deleted", BETA.key)]
        await store.continue_decision_review("p", 20)  # caught up once: nothing is flagged twice
        again = await store.get_decisions("p", [on_alpha, on_beta])
        assert [len(d.review) for d in again] == [1, 1]
