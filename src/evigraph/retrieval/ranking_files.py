"""The graph-ranking snapshot saved beside the knowledge base, so an open reads it memory-mapped.

Loading graph ranking's inputs reads every passage's bridge-sentence vectors and every entity's
name vector from the store, then compiles them: the most expensive of the derived indexes on a
knowledge base with vectors. The compiled `Snapshot` is saved with the store's other derived
indexes (`store/index_files.py`, labelled with its write generation) and read back as mapped
arrays; its dicts and lists of lists become sorted-key and offset look-ups that answer alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.retrieval.ranking_snapshot import Snapshot, csr_walk
from evigraph.store.base import GraphStore
from evigraph.store.index_files import keyed_arrays, keyed_of, rows_arrays, rows_of, strings_arrays, strings_of
from evigraph.store.saved_indexes import RANKING_SNAPSHOT

NAME = RANKING_SNAPSHOT
_ARRAYS = (
    "alive",
    "entity_vectors",
    "entity_usable",
    "passage_count",
    "sentence_vectors",
    "edge_entity",
    "edge_passage",
    "edge_count",
)


def save_arrays(snap: Snapshot) -> tuple[dict[str, Any], dict[str, Any]]:
    walk = snap.walk
    arrays: dict[str, Any] = {name: getattr(snap, name) for name in _ARRAYS}
    arrays.update(strings_arrays("passages", list(snap.passages)))
    arrays.update(strings_arrays("entity_keys", list(snap.entity_keys)))
    arrays.update(strings_arrays("entity_names", list(snap.entity_names)))
    arrays.update(rows_arrays("sentence_entities", snap.sentence_entities))
    arrays.update(rows_arrays("entity_sentences", snap.entity_sentences))
    arrays.update(keyed_arrays("row_of", snap.row_of))
    arrays.update(keyed_arrays("node_of", snap.node_of))
    arrays.update(walk_data=walk.data, walk_indices=walk.indices, walk_indptr=walk.indptr)
    return arrays, {"nodes": int(walk.shape[0])}


def load_arrays(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> Snapshot:
    n = int(values["nodes"])
    walk = csr_walk(arrays["walk_data"], arrays["walk_indices"], arrays["walk_indptr"], n)
    return Snapshot(
        passages=strings_of(arrays, "passages"),
        entity_keys=strings_of(arrays, "entity_keys"),
        entity_names=strings_of(arrays, "entity_names"),
        sentence_entities=rows_of(arrays, "sentence_entities"),
        entity_sentences=rows_of(arrays, "entity_sentences"),
        walk=walk,
        row_of=keyed_of(arrays, "row_of"),
        node_of=keyed_of(arrays, "node_of"),
        **{name: arrays[name] for name in _ARRAYS},
    )


async def saved_snapshot(store: GraphStore) -> Snapshot | None:
    """The snapshot saved at the store's current generation, or None (none, stale or damaged)."""
    import asyncio

    files = store.saved_index_files()
    generation = await store.write_generation() if files is not None else None
    if files is None or generation is None:
        return None
    found = await asyncio.to_thread(files.load, NAME, generation)
    if found is None:
        return None
    try:
        return load_arrays(*found)
    except (KeyError, ValueError, TypeError, IndexError):
        return None


async def save_snapshot(store: GraphStore, snap: Snapshot, generation: str | None) -> None:
    """Save `snap`, compiled from what the store held at `generation`, unless a write has moved
    the generation on since (the rows were read in several transactions, so the label is
    checked at both ends)."""
    import asyncio

    files = store.saved_index_files()
    if files is None or generation is None or await store.write_generation() != generation:
        return
    arrays, values = save_arrays(snap)
    await asyncio.to_thread(files.save, NAME, generation, arrays, values)
