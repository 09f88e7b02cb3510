"""The graph's adjacency written straight from the store's rows to the arrays `saved_indexes` reads.

Saving the graph index used to build it first as Python objects (a `Rel` per relation, dicts of
lists per entity and passage) and then convert those into arrays, holding both copies at once.
Here each relation row goes into a few flat buffers as it is read (its texts as UTF-8 bytes, its
entities and passages as small integers), and the lists are grouped at the end by one stable sort
per list, so memory follows the bytes of the rows, not an object per relation, and the lists keep
the order in which `GraphLists` would have filled them (the arrays mean what `_save_graph`'s do).
`bench/scale.py --store falkordb --passages 20000` (136,130 relations): the save at close added
273-294 MB to the ingest's peak, against 528 MB before (runs an hour apart on a loaded machine).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from evigraph.store.core.graph_index import Rel
from evigraph.store.index_files import pack_strings, sorted_keys

REL_TEXTS = ("id", "source", "target", "source_name", "target_name", "type", "fact")
"""A relation row's texts, in `saved_indexes`' order (`rel_<name>` arrays)."""

Packed = tuple[Any, Any]
"""Strings as `pack_strings` lays them out: (UTF-8 bytes, offsets), numpy arrays."""


class _Texts:
    """One column of strings as `pack_strings` lays it out, filled a string at a time."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends = array("q")

    def add(self, text: str) -> None:
        self.data += text.encode("utf-8")
        self.ends.append(len(self.data))

    def arrays(self, prefix: str) -> dict[str, Any]:
        import numpy as np

        offsets = np.zeros(len(self.ends) + 1, dtype=np.int64)
        offsets[1:] = np.frombuffer(self.ends, dtype=np.int64)
        # A view of the buffer, not a copy: a column (the facts) can be the largest array saved.
        return {f"{prefix}_data": np.frombuffer(self.data, dtype=np.uint8), f"{prefix}_offsets": offsets}


class _Numbered:
    """Strings numbered in the order first seen, and later ranked in `SortedKeys`' byte order."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def number(self, key: str) -> int:
        found = self.numbers.get(key)
        if found is None:
            found = self.numbers[key] = len(self.numbers)
        return found

    def ranked(self) -> tuple[Packed, Any]:
        """The keys in sorted order, packed, and each number's rank among them."""
        import numpy as np

        keys, order = sorted_keys(list(self.numbers))
        self.numbers = {}
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        return pack_strings(keys), rank


class GraphArrays:
    """Relation and mention rows in, `saved_indexes.GRAPH`'s arrays out (`arrays`)."""

    def __init__(self) -> None:
        self._texts = {name: _Texts() for name in REL_TEXTS}
        self._chunk_texts = _Texts()
        self._confidence = array("d")
        self._chunk_ends = array("q")
        self._entities = _Numbered()
        self._chunks = _Numbered()
        self._edges = (array("q"), array("q"))  # (entity, relation row), as `GraphLists.relation` appends
        self._stated = (array("q"), array("q"))  # (chunk, relation row)
        self._mentions = (array("q"), array("q"))  # (entity, chunk), one per mention row
        self._rows = 0

    def relation(self, rel: Rel) -> None:
        """One relation, given as `GraphLists.relation` takes it (the object is not kept)."""
        row = self._rows
        self._rows += 1
        for name, texts in self._texts.items():
            texts.add(getattr(rel, name))
        self._confidence.append(rel.confidence)
        listed = rel.chunks
        for chunk in listed:
            self._chunk_texts.add(chunk)
        self._chunk_ends.append(len(self._chunk_texts.ends))
        source, target = rel.source, rel.target
        self._edges[0].append(self._entities.number(source))
        self._edges[1].append(row)
        if target != source:
            self._edges[0].append(self._entities.number(target))
            self._edges[1].append(row)
        for chunk in dict.fromkeys(listed):
            self._stated[0].append(self._chunks.number(chunk))
            self._stated[1].append(row)

    def mention(self, entity: str, chunk: str) -> None:
        self._mentions[0].append(self._entities.number(entity))
        self._mentions[1].append(self._chunks.number(chunk))

    def arrays(self) -> dict[str, Any]:
        """Every array `_load_graph` reads; the builder is spent after."""
        return dict(self.parts())

    def parts(self) -> Iterator[tuple[str, Any]]:
        """`arrays` one array at a time, each buffer of rows dropped once the arrays made from it
        are out, so a caller that writes each to a file as it comes (`IndexFiles.save`) holds one
        array and the rows not yet turned into arrays, never the whole index twice. The builder is
        spent after."""
        import numpy as np

        texts, self._texts = self._texts, {}
        for name in REL_TEXTS:
            yield from texts.pop(name).arrays(f"rel_{name}").items()
        yield "rel_confidence", np.frombuffer(self._confidence, dtype=np.float64).copy()
        self._confidence = array("d")
        chunk_offsets = np.zeros(self._rows + 1, dtype=np.int64)
        chunk_offsets[1:] = np.frombuffer(self._chunk_ends, dtype=np.int64)
        self._chunk_ends = array("q")
        yield "rel_chunk_offsets", chunk_offsets
        del chunk_offsets
        chunk_texts, self._chunk_texts = self._chunk_texts, _Texts()
        yield from chunk_texts.arrays("rel_chunks").items()
        del chunk_texts
        entities, entity_rank = self._entities.ranked()
        chunks, chunk_rank = self._chunks.ranked()
        edges, self._edges = self._edges, (array("q"), array("q"))
        yield from _lists("edges", edges, entities, entity_rank, None, None).items()
        del edges
        stated, self._stated = self._stated, (array("q"), array("q"))
        yield from _lists("stated", stated, chunks, chunk_rank, None, None).items()
        del stated
        mentions, self._mentions = self._mentions, (array("q"), array("q"))
        yield from _lists("mentions", mentions, entities, entity_rank, chunks, chunk_rank).items()
        yield from _lists("mentioned", (mentions[1], mentions[0]), chunks, chunk_rank, entities, entity_rank).items()


def _lists(
    prefix: str,
    pairs: tuple[array[int], array[int]],
    keys: Packed,
    key_rank: Any,
    items: Packed | None,
    item_rank: Any | None,
) -> dict[str, Any]:
    """(key, item) pairs as `lists_arrays` lays them out: the keys present, sorted; each key's
    items in the order the pairs came (a stable sort), or, with `items`, the strings they number
    sorted and packed (`GraphLists.done` sorts mentions so too)."""
    import numpy as np

    ranks = key_rank[np.frombuffer(pairs[0], dtype=np.int64)]
    if item_rank is None:
        order = np.argsort(ranks, kind="stable")
    else:
        order = np.lexsort((item_rank[np.frombuffer(pairs[1], dtype=np.int64)], ranks))
    ranks = ranks[order]
    present, counts = np.unique(ranks, return_counts=True)
    offsets = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = {**_gathered(f"{prefix}_keys", keys, present), f"{prefix}_offsets": offsets}
    flat = np.frombuffer(pairs[1], dtype=np.int64)[order]
    if items is None:
        out[f"{prefix}_items"] = flat
    else:
        assert item_rank is not None
        out.update(_gathered(f"{prefix}_items", items, item_rank[flat]))
    return out


GATHER_SLICE = 1 << 16
"""Strings copied per numpy step in `_gathered`: its byte index is about 20 of their bytes each."""


def _gathered(prefix: str, strings: Packed, picks: Any) -> dict[str, Any]:
    """`strings_arrays` of the packed `strings` at positions `picks` (repeats allowed), copied in
    numpy a slice at a time. The mentions list a string per mention (1.5 million of them in a
    100,000-passage knowledge base), and gathering them as Python bytes made an int and a
    reference for each on top of the bytes."""
    import numpy as np

    data, offsets = strings
    starts = offsets[picks]
    lengths = offsets[picks + 1] - starts
    out_offsets = np.zeros(len(picks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    for lo in range(0, len(picks), GATHER_SLICE):
        hi = min(lo + GATHER_SLICE, len(picks))
        first, last = int(out_offsets[lo]), int(out_offsets[hi])
        # Each output byte's source: its string's start, moved by its place in the output.
        shift = np.repeat(starts[lo:hi] - out_offsets[lo:hi], lengths[lo:hi])
        out[first:last] = data[shift + np.arange(first, last, dtype=np.int64)]
    return {f"{prefix}_data": out, f"{prefix}_offsets": out_offsets}
