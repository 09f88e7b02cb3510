"""Derived indexes kept on disk beside a knowledge base, so an open reads them instead of rebuilding.

What retrieval derives from the graph (BM25 postings, the name index, the graph's adjacency,
vectors) took tens of seconds to rebuild on each open of a large knowledge base. Each index is
saved here as numpy arrays (`.npy`, opened memory-mapped: an open costs a few file opens, and
only the pages a question touches are read) plus one manifest per index, written last.

A manifest names the store's write generation the arrays were built at, the format, and each
array's file and size. An index is used only when its manifest parses, its generation is the
store's current one, and every file is there with its recorded size; anything else (a write
since, a missing or truncated file, a manifest cut short) reads as no index, and the store
rebuilds it from the graph as before. Files carry a fresh token in their names and the manifest
is replaced atomically (`os.replace`) after them, so a crash mid-save leaves the previous index
whole, or nothing usable: never a mix.

A directory that cannot be written (a read-only open of someone else's knowledge base) only
means the index is rebuilt in memory, as before.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import importlib
import json
import logging
import os
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

FORMAT = 1
"""Bumped whenever an index's arrays change meaning: older files then read as missing."""

SUFFIX = ".indexes"
"""The folder beside an embedded knowledge base's file: `kb.db` keeps its indexes in `kb.db.indexes/`."""


def prefetch_numpy() -> None:
    """Import numpy in a background thread, for the first question's index reads.

    Every retrieve reads the saved indexes through numpy, and its import (50-370 ms on a busy
    2-core machine) was most of a first retrieve once the indexes stopped being rebuilt (100k
    passages: 598 ms first, 30 ms warm). Started as a store opens, it overlaps the engine's own
    open; a process that never asks a question does not wait for it.

    The thread is not a daemon: a process whose open failed at once (`--db` naming a text file)
    exited while numpy was still importing, and the interpreter's shutdown under the import
    crashed with SIGSEGV about once in 40 runs on a busy machine. Exit now waits for the import.
    """
    if "numpy" in sys.modules:
        return
    threading.Thread(target=importlib.import_module, args=("numpy",), name="evigraph-numpy").start()


def user_cache_folder(*names: str) -> Path:
    """A folder in this user's cache (`$XDG_CACHE_HOME`, else ~/.cache) for indexes of a knowledge
    base that is not a file here (a server's graph); each name made safe for a file system and
    told apart from the others it could have become by a short hash."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evigraph" / "indexes"
    for name in names:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60]
        root /= f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return root


class IndexFiles:
    """One folder of saved indexes, each under a name (`passages_bm25`, `graph`, ...)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self, name: str, generation: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The arrays (memory-mapped) and the small values saved under `name` at `generation`, or None."""
        import numpy as np

        found = self._read_manifest(name)
        if found is None or found.get("generation") != generation:
            return None
        arrays: dict[str, Any] = {}
        try:
            for part, (file, size) in found["arrays"].items():
                path = self.folder / file
                if path.stat().st_size != size:
                    return None
                # A plain array over the mapping: numpy's memmap subclass cost 3 us an element read.
                arrays[part] = np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)
            values = found["values"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return arrays, values

    def save(
        self,
        name: str,
        generation: str,
        arrays: Mapping[str, Any] | Iterable[tuple[str, Any]],
        values: Mapping[str, Any],
    ) -> bool:
        """Write the arrays, then the manifest; False when the folder cannot be written.

        `arrays` may be `(part, array)` pairs made as they are asked for: each is written and
        let go before the next is made (`GraphArrays.parts`)."""
        import numpy as np

        token = uuid.uuid4().hex[:12]
        written: list[Path] = []
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            listed: dict[str, tuple[str, int]] = {}
            for part, array in arrays.items() if isinstance(arrays, Mapping) else arrays:
                file = f"{name}.{token}.{part}.npy"
                path = self.folder / file
                with path.open("wb") as f:
                    np.save(f, np.ascontiguousarray(array), allow_pickle=False)
                    f.flush()
                    os.fsync(f.fileno())
                del array  # before the next is made
                written.append(path)
                listed[part] = (file, path.stat().st_size)
            body = {"format": FORMAT, "generation": generation, "arrays": listed, "values": dict(values)}
            temporary = self.folder / f"{name}.{token}.json.tmp"
            with temporary.open("w", encoding="utf-8") as f:
                json.dump(body, f)
                f.flush()
                os.fsync(f.fileno())
            written.append(temporary)
            os.replace(temporary, self._manifest(name))
        except BaseException as exc:  # arrays made as they are written can fail as they are made
            for path in written:
                with contextlib.suppress(OSError):
                    path.unlink()
            if not isinstance(exc, OSError):
                raise
            log.debug("could not save the %s index in %s: %s", name, self.folder, exc)
            return False
        self._sweep(name)
        return True

    def relabel(self, name: str, before: str, after: str) -> bool:
        """Label the index saved at `before` as saved at `after` (its arrays kept), for a write
        its data does not read; False when it was not saved at `before` or cannot be rewritten."""
        manifest = self._manifest(name)
        found = self._read_manifest(name)
        if found is None or found.get("generation") != before:
            return False
        try:
            temporary = self.folder / f"{name}.{uuid.uuid4().hex[:12]}.json.tmp"
            with temporary.open("w", encoding="utf-8") as f:
                json.dump({**found, "generation": after}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, manifest)
        except (OSError, ValueError):
            return False
        return True

    def remove(self, name: str) -> None:
        """Remove the index saved under `name`, its manifest first (a process that mapped its
        arrays keeps reading them)."""
        with contextlib.suppress(OSError):
            self._manifest(name).unlink()
        try:
            for path in self.folder.glob(f"{name}.*"):
                with contextlib.suppress(OSError):
                    path.unlink()
        except OSError:
            return

    def names(self) -> list[str]:
        """The indexes saved here, by name."""
        try:
            return sorted(p.stem for p in self.folder.glob("*.json"))
        except OSError:
            return []

    def _sweep(self, name: str) -> None:
        """Remove this index's files the manifest does not name: earlier saves' (a process that
        mapped them keeps reading them), and a concurrent save's, whose manifest then names
        missing files: that index reads as missing and is built again, never mixed with this one."""
        try:
            listed = json.loads(self._manifest(name).read_text(encoding="utf-8"))["arrays"]
            keep = {file for file, _ in listed.values()}
            for path in self.folder.glob(f"{name}.*"):
                if path.name != self._manifest(name).name and path.name not in keep:
                    with contextlib.suppress(OSError):
                        path.unlink()
        except (OSError, ValueError, KeyError, TypeError):
            return

    def generation(self, name: str) -> str | None:
        """The generation `name`'s manifest says it was saved at, without mapping its arrays (they
        may still be missing or cut short: `load` checks them)."""
        found = self._read_manifest(name)
        saved = found.get("generation") if found is not None else None
        return saved if isinstance(saved, str) else None

    def _read_manifest(self, name: str) -> dict[str, Any] | None:
        try:
            found = json.loads(self._manifest(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) and found.get("format") == FORMAT else None

    def _manifest(self, name: str) -> Path:
        return self.folder / f"{name}.json"


# -- strings as arrays -------------------------------------------------------------------------


def pack_strings(strings: Sequence[str]) -> tuple[Any, Any]:
    """`strings` as one UTF-8 byte array and the offsets of each string's start (one more than strings)."""
    import numpy as np

    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


class _ByOffsets(Sequence[T]):
    """Row i of a saved array, read from `offsets[i]` to `offsets[i + 1]` on demand."""

    def __init__(self, offsets: Any) -> None:
        self._offsets = items(offsets)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self._row(i)

    def _row(self, i: int) -> T:
        raise NotImplementedError


class PackedStrings(_ByOffsets[str]):
    """Strings read from `pack_strings`' arrays one at a time, so a list of 100,000 ids costs no
    Python objects until a question reads a few of them."""

    def __init__(self, data: Any, offsets: Any) -> None:
        super().__init__(offsets)
        self._data = items(data)

    def _row(self, i: int) -> str:
        return self.raw(i).decode("utf-8")

    def raw(self, i: int) -> bytes:
        return bytes(self._data[self._offsets[i] : self._offsets[i + 1]])

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self)):
            yield self[i]


class SortedKeys(Mapping[str, int]):
    """A look-up from string to int over strings saved in sorted order: a binary search of the
    mapped arrays, where a dict of every key would be built on open. Without `values` a key
    maps to its position."""

    def __init__(self, keys: PackedStrings, values: Any | None = None) -> None:
        self.strings = keys
        self._values = None if values is None else items(values)
        self._bytes = _BytesView(keys)

    def position(self, key: str) -> int | None:
        wanted = key.encode("utf-8")
        i = bisect.bisect_left(self._bytes, wanted)
        if i < len(self.strings) and self.strings.raw(i) == wanted:
            return i
        return None

    def __getitem__(self, key: str) -> int:
        i = self.position(key) if isinstance(key, str) else None
        if i is None:
            raise KeyError(key)
        return i if self._values is None else self._values[i]

    def __len__(self) -> int:
        return len(self.strings)

    def __iter__(self) -> Iterator[str]:
        return iter(self.strings)


class ListsByKey(Mapping[str, list[T]]):
    """key -> list, saved as sorted keys and one flat run of items sliced by `offsets`."""

    def __init__(self, keys: SortedKeys, offsets: Any, item: Callable[[int], T]) -> None:
        self._keys = keys
        self._offsets = items(offsets)
        self._item = item

    def __getitem__(self, key: str) -> list[T]:
        row = self._keys.position(key) if isinstance(key, str) else None
        if row is None:
            raise KeyError(key)
        return [self._item(j) for j in range(self._offsets[row], self._offsets[row + 1])]

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)


class _BytesView(Sequence[bytes]):
    def __init__(self, strings: PackedStrings) -> None:
        self._strings = strings

    def __len__(self) -> int:
        return len(self._strings)

    def __getitem__(self, i: Any) -> Any:
        return self._strings.raw(i)


def sorted_keys(keys: Sequence[str]) -> tuple[list[str], Any]:
    """`keys` in the order `SortedKeys` searches (by UTF-8 bytes), and each one's position in `keys`."""
    import numpy as np

    order = sorted(range(len(keys)), key=lambda i: keys[i].encode("utf-8"))
    return [keys[i] for i in order], np.asarray(order, dtype=np.int64)


def strings_arrays(prefix: str, strings: Sequence[str]) -> dict[str, Any]:
    data, offsets = pack_strings(strings)
    return {f"{prefix}_data": data, f"{prefix}_offsets": offsets}


def strings_of(arrays: Mapping[str, Any], prefix: str) -> PackedStrings:
    return PackedStrings(arrays[f"{prefix}_data"], arrays[f"{prefix}_offsets"])


def lists_arrays(prefix: str, mapping: Mapping[str, Sequence[Any]], flat_dtype: Any | None) -> dict[str, Any]:
    """`mapping` as `ListsByKey` reads it: sorted keys, offsets, and the items one after another
    (`flat_dtype` None: strings, packed; else numbers of that dtype)."""
    import numpy as np

    keys, _ = sorted_keys(list(mapping))
    flat: list[Any] = []
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    for i, key in enumerate(keys):
        flat.extend(mapping[key])
        offsets[i + 1] = len(flat)
    out = {**strings_arrays(f"{prefix}_keys", keys), f"{prefix}_offsets": offsets}
    if flat_dtype is None:
        out.update(strings_arrays(f"{prefix}_items", flat))
    else:
        out[f"{prefix}_items"] = np.asarray(flat, dtype=flat_dtype)
    return out


def string_lists(arrays: Mapping[str, Any], prefix: str) -> ListsByKey[str]:
    items = strings_of(arrays, f"{prefix}_items")
    return ListsByKey(SortedKeys(strings_of(arrays, f"{prefix}_keys")), arrays[f"{prefix}_offsets"], items.__getitem__)


def number_lists(arrays: Mapping[str, Any], prefix: str, item: Callable[[int], T]) -> ListsByKey[T]:
    """Lists of numbers, each turned into its item by `item` (a relation from its row, say)."""
    flat = items(arrays[f"{prefix}_items"])
    return ListsByKey(
        SortedKeys(strings_of(arrays, f"{prefix}_keys")), arrays[f"{prefix}_offsets"], lambda j: item(flat[j])
    )


def items(array: Any) -> Any:
    """A one-dimensional array as a memoryview, whose elements read as Python numbers in tens of
    nanoseconds (a numpy element read costs about ten times that)."""
    import numpy as np

    return np.ascontiguousarray(array).data


class ListsByRow(_ByOffsets[list[int]]):
    """Row -> list of ints, saved as offsets and one flat run of numbers (`rows_arrays`)."""

    def __init__(self, offsets: Any, flat: Any) -> None:
        super().__init__(offsets)
        self._flat = items(flat)

    def _row(self, i: int) -> list[int]:
        rows: list[int] = self._flat[self._offsets[i] : self._offsets[i + 1]].tolist()
        return rows


def rows_arrays(prefix: str, rows: Sequence[Sequence[int]]) -> dict[str, Any]:
    import numpy as np

    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    if rows:
        np.cumsum([len(r) for r in rows], out=offsets[1:])
    flat = np.fromiter((x for r in rows for x in r), dtype=np.int64, count=int(offsets[-1]))
    return {f"{prefix}_offsets": offsets, f"{prefix}_flat": flat}


def rows_of(arrays: Mapping[str, Any], prefix: str) -> ListsByRow:
    return ListsByRow(arrays[f"{prefix}_offsets"], arrays[f"{prefix}_flat"])


def keyed_arrays(prefix: str, mapping: Mapping[str, int]) -> dict[str, Any]:
    """A str -> int mapping as `keyed_of` reads it back (a `SortedKeys` with values)."""
    import numpy as np

    keys, _ = sorted_keys(list(mapping))
    return {**strings_arrays(prefix, keys), f"{prefix}_values": np.asarray([mapping[k] for k in keys], dtype=np.int64)}


def keyed_of(arrays: Mapping[str, Any], prefix: str) -> SortedKeys:
    return SortedKeys(strings_of(arrays, prefix), arrays[f"{prefix}_values"])
