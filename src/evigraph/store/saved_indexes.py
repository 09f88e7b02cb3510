"""Each derived index as arrays to save (`index_files`) and back, read memory-mapped.

The loaded forms answer exactly as the built ones: the same classes, their dict fields replaced
by look-ups over sorted, mapped arrays (`SortedKeys`, `ListsByKey`), so an open builds no Python
object per passage or entity. A test holds every loaded index's answers to the built one's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from evigraph.memory import give_back_memory, resident_bytes
from evigraph.store.bm25 import TextIndex
from evigraph.store.caches import VECTOR_CODECS, FactVectors, NameIndex, TermIndex, VectorMatrix
from evigraph.store.core.graph_arrays import REL_TEXTS
from evigraph.store.core.graph_index import GraphIndex, Rel
from evigraph.store.index_files import (
    IndexFiles,
    ListsByKey,
    SortedKeys,
    items,
    lists_arrays,
    number_lists,
    sorted_keys,
    string_lists,
    strings_arrays,
    strings_of,
)

Index = TypeVar("Index")
log = logging.getLogger(__name__)
Arrays = dict[str, Any]
Values = dict[str, Any]


@dataclass(frozen=True)
class Codec(Generic[Index]):
    """How one kind of index is saved (`save`: its arrays and small values) and loaded."""

    save: Callable[[Index], tuple[Arrays, Values]]
    load: Callable[[Mapping[str, Any], Mapping[str, Any]], Index]


# -- BM25 --------------------------------------------------------------------------------------


def _save_text(index: TextIndex) -> tuple[Arrays, Values]:
    stems, _ = sorted_keys(list(index.stems))
    numbers = [index.stems[s] for s in stems]
    arrays = {
        **strings_arrays("ids", list(index.ids)),
        **strings_arrays("stems", stems),
        "stem_numbers": _int64(numbers),
        "starts": index.starts,
        "docs": index.docs,
        "counts": index.counts,
        "norms": index.norms,
    }
    return arrays, {}


def _load_text(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> TextIndex:
    return TextIndex(
        ids=strings_of(arrays, "ids"),
        stems=SortedKeys(strings_of(arrays, "stems"), arrays["stem_numbers"]),
        starts=arrays["starts"],
        docs=arrays["docs"],
        counts=arrays["counts"],
        norms=arrays["norms"],
    )


TEXT = Codec(_save_text, _load_text)

TEXT_INDEXES = {"passage_texts": "passages_bm25", "entity_texts": "entities_bm25", "code_texts": "code_bm25"}
"""Each store's reader of a table's full-text column (by its function's name) -> the saved index
built from it: one list, so both stores name the same index the same way."""


# -- names and term counts ---------------------------------------------------------------------


def _save_names(index: NameIndex) -> tuple[Arrays, Values]:
    return lists_arrays("names", index.by_name, None), {"longest": index.longest}


def _load_names(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> NameIndex:
    return NameIndex(string_lists(arrays, "names"), int(values["longest"]))


NAMES = Codec(_save_names, _load_names)


def _save_terms(index: TermIndex) -> tuple[Arrays, Values]:
    terms, _ = sorted_keys(list(index.frequencies))
    counts = [index.frequencies[t] for t in terms]
    return {**strings_arrays("terms", terms), "counts": _int64(counts)}, {"passages": index.passages}


def _load_terms(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> TermIndex:
    return TermIndex(int(values["passages"]), SortedKeys(strings_of(arrays, "terms"), arrays["counts"]))


TERMS = Codec(_save_terms, _load_terms)


# -- vectors -----------------------------------------------------------------------------------


def _save_vectors(index: VectorMatrix) -> tuple[Arrays, Values]:
    scales = {} if index.scales is None else {"scales": index.scales}
    return {**strings_arrays("ids", list(index.ids)), "matrix": index.matrix, **scales}, {}


def _load_vectors(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> VectorMatrix:
    return VectorMatrix(strings_of(arrays, "ids"), arrays["matrix"], arrays.get("scales"))


VECTORS = Codec(_save_vectors, _load_vectors)


def _save_facts(index: FactVectors) -> tuple[Arrays, Values]:
    arrays, values = _save_vectors(index.vectors)
    places = {**strings_arrays("chunks", list(index.chunks)), **strings_arrays("sources", list(index.sources))}
    return {**arrays, **places}, values


def _load_facts(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> FactVectors:
    return FactVectors(_load_vectors(arrays, values), strings_of(arrays, "chunks"), strings_of(arrays, "sources"))


FACTS = Codec(_save_facts, _load_facts)
"""Relations' fact vectors (`FactVectors`), beside the passages' (`VECTORS`)."""


# -- titles ------------------------------------------------------------------------------------


class SavedTitles(Mapping[str, tuple[str, str | None]]):
    """Document key -> (title, path), as `reads.titles` gives it."""

    def __init__(self, arrays: Mapping[str, Any]) -> None:
        self._keys = SortedKeys(strings_of(arrays, "keys"))
        self._titles = strings_of(arrays, "titles")
        self._paths = strings_of(arrays, "paths")
        self._has_path = arrays["has_path"]

    def __getitem__(self, key: str) -> tuple[str, str | None]:
        row = self._keys.position(key) if isinstance(key, str) else None
        if row is None:
            raise KeyError(key)
        return self._titles[row], self._paths[row] if self._has_path[row] else None

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Any:
        return iter(self._keys)


def _save_titles(titles: Mapping[str, tuple[str, str | None]]) -> tuple[Arrays, Values]:
    import numpy as np

    keys, _ = sorted_keys(list(titles))
    rows = [titles[k] for k in keys]
    arrays = {
        **strings_arrays("keys", keys),
        **strings_arrays("titles", [t for t, _ in rows]),
        **strings_arrays("paths", [p or "" for _, p in rows]),
        "has_path": np.asarray([p is not None for _, p in rows], dtype=bool),
    }
    return arrays, {}


TITLES: Codec[Mapping[str, tuple[str, str | None]]] = Codec(_save_titles, lambda arrays, values: SavedTitles(arrays))


# -- the graph ---------------------------------------------------------------------------------

RELATIONS_KEPT = 50_000
"""Relations read from the mapped arrays are kept as objects, up to this many (a question reads a
few hundred; each costs eight string reads)."""


def _load_graph(arrays: Mapping[str, Any], values: Mapping[str, Any]) -> GraphIndex:
    texts = {name: strings_of(arrays, f"rel_{name}") for name in REL_TEXTS}
    confidence = items(arrays["rel_confidence"])
    chunk_offsets = items(arrays["rel_chunk_offsets"])
    chunks = strings_of(arrays, "rel_chunks")

    @functools.lru_cache(maxsize=RELATIONS_KEPT)
    def rel(i: int) -> Rel:
        lo, hi = chunk_offsets[i], chunk_offsets[i + 1]
        return Rel(
            texts["id"][i],
            texts["source"][i],
            texts["target"][i],
            texts["source_name"][i],
            texts["target_name"][i],
            texts["type"][i],
            texts["fact"][i],
            confidence[i],
            tuple(chunks[j] for j in range(lo, hi)),
        )

    edges: ListsByKey[Rel] = number_lists(arrays, "edges", rel)
    stated: ListsByKey[Rel] = number_lists(arrays, "stated", rel)
    return GraphIndex(
        edges=edges,
        mentions=string_lists(arrays, "mentions"),
        mentioned=string_lists(arrays, "mentioned"),
        stated=stated,
    )


def _save_graph(index: GraphIndex) -> tuple[Arrays, Values]:
    raise TypeError("the graph index is saved from the store's rows (`SavedIndexes.get_arrays`), not built first")


GRAPH = Codec(_save_graph, _load_graph)


def _int64(values: list[int]) -> Any:
    import numpy as np

    return np.asarray(values, dtype=np.int64)


RANKING_SNAPSHOT = "ranking"
"""Graph ranking's compiled snapshot (`retrieval/ranking_files.py`), saved with these indexes."""

RANKING_VECTOR_READERS: Mapping[str, tuple[str, ...]] = {
    "sentences": (RANKING_SNAPSHOT,),
    "entity": (RANKING_SNAPSHOT,),
    "fact": ("fact_vectors", "fact_vectors_int8"),
}
"""Each kind of ranking vector (`RankingText.kind`) -> the saved indexes made from it; a write of
other kinds leaves them as they were (`SavedIndexes.relabel`)."""


def codec_names(base: str, codec: str) -> tuple[str, list[str]]:
    """The name a vector index of `codec` is saved under (each codec its own, so a switch never
    reads the other's matrix), and the names of the other codecs' copies it replaces."""

    def named(c: str) -> str:
        return base if c == "float32" else f"{base}_{c}"

    return named(codec), [named(c) for c in VECTOR_CODECS if c != codec]


# -- loading, or building and saving -----------------------------------------------------------


class SavedIndexes:
    """A store's derived indexes, read from its folder when they match the store's generation,
    else built from the graph and saved for the next open (`files` None: built, never saved)."""

    def __init__(self, files: IndexFiles | None) -> None:
        self.files = files

    def get(
        self,
        name: str,
        codec: Codec[Index],
        generation: Callable[[], str | None],
        build: Callable[[], tuple[str | None, Index]],
        replaces: Sequence[str] = (),
    ) -> Index:
        """`build` returns the index and the generation it was built at (read in the same
        transaction as its rows, so the label is the data's). Once it is saved, the indexes it
        `replaces` are removed (another vector codec's matrix: nothing would read it again)."""
        if self.files is not None:
            current = generation()
            found = self._load(name, codec, current) if current is not None else None
            if found is not None:
                return found
        built_at, index = build()
        if self.files is None or built_at is None:
            return index
        try:
            arrays, values = codec.save(index)
        except Exception as exc:  # an index that cannot be saved is still the right answer
            log.warning("could not save the %s index (%s): it is built again at the next open", name, exc)
            return index
        if not self.files.save(name, built_at, arrays, values):
            return index
        for other in replaces:
            self.files.remove(other)
        # Serve from the mapped copy: the built one's Python objects are then freed.
        return self._load(name, codec, built_at) or index

    def get_arrays(
        self,
        name: str,
        codec: Codec[Index],
        generation: Callable[[], str | None],
        build: Callable[[], tuple[str | None, Index]],
        arrays: Callable[[], tuple[str | None, Iterable[tuple[str, Any]], Values]],
    ) -> Index:
        """As `get`, for an index whose arrays are made from the store's rows without building its
        objects first (`arrays`: the generation read beside the rows, and the arrays as `(part,
        array)` pairs made as they are written, so the save holds one at a time); `build` is for
        a store that saves nothing, and for a save that failed part way, its pairs spent."""
        if self.files is None:
            return build()[1]
        current = generation()
        found = self._load(name, codec, current) if current is not None else None
        if found is not None:
            return found
        built_at, made, values = arrays()
        if built_at is None:  # the rows changed as they were read: answer from them, save nothing
            return codec.load(dict(made), values)
        if self.files.save(name, built_at, made, values):
            loaded = self._load(name, codec, built_at)  # the mapped copy
            if loaded is not None:
                return loaded
        return build()[1]

    def relabel(self, before: str | None, after: str | None, kinds: Collection[str]) -> None:
        """After a write of ranking vectors of `kinds` moved the generation from `before` to
        `after`, label every index saved at `before` that reads none of them as saved at `after`:
        it is still the data's, and a close would otherwise leave it to be rebuilt at the next
        open (it is held in memory, so the close saves nothing new)."""
        if self.files is None or before is None or after is None or not set(kinds) <= set(RANKING_VECTOR_READERS):
            return
        changed = {name for kind in kinds for name in RANKING_VECTOR_READERS[kind]}
        for name in self.files.names():
            if name not in changed:
                self.files.relabel(name, before, after)

    def _load(self, name: str, codec: Codec[Index], generation: str) -> Index | None:
        assert self.files is not None
        found = self.files.load(name, generation)
        if found is None:
            return None
        try:
            return codec.load(*found)
        except (KeyError, ValueError, TypeError, IndexError):  # a manifest that names other arrays
            return None


async def run_steps(
    steps: Sequence[tuple[str, Callable[[], Awaitable[object]]]], progress: Callable[[str, int, int], None] | None
) -> None:
    """Build or read each named index in turn (each is saved as it is built), telling `progress`
    `(name, done, total)` before each and once at the end (`GraphStore.save_indexes`).

    What the writes before freed is given back first, and what a step freed before the next
    starts whenever the step left the process `TRIM_AFTER_GROWTH` larger, so the save's peak is
    its largest step's, not that step's on top of what came before it left in the allocator:
    saving 100,000 passages (LadybugDB, a fresh process) kept 632 instead of 849 MB resident after
    its graph step. A small save, which grows by less, is not slowed by a trim per step (about
    3 ms each in a process that has run a few hundred of them)."""
    await asyncio.to_thread(give_back_memory)
    for done, (name, step) in enumerate(steps):
        if progress is not None:
            progress(name, done, len(steps))
        before = resident_bytes()
        await step()
        after = resident_bytes()
        if before is None or after is None or after - before >= TRIM_AFTER_GROWTH:
            await asyncio.to_thread(give_back_memory)
    if progress is not None:
        progress("", len(steps), len(steps))


TRIM_AFTER_GROWTH = 32 << 20
"""A save step that grew the process by this much gets its freed memory given back: under it, what
a trim could return is small beside the hundreds of megabytes a large save's steps take."""
