"""JSON Lines: many documents in one file, one record a line.

Exports from databases, scrapers and datasets arrive as JSONL. Each record becomes its own
document keyed by the record's `id`, so re-ingesting the export updates records in place instead
of duplicating the whole file. Errors name the line, because "invalid JSON" in a 100,000-line
file is useless without it.

Ingest streams the file (`stream`): one line in memory at a time, and a bad line becomes a
`RejectedRecord` while the good records are ingested. `load` keeps the all-or-nothing contract
for callers who want the whole file as a list.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evigraph.errors import InputError
from evigraph.ingest.loaders.base import LoaderStrategy, RejectedRecord
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES, iter_lines
from evigraph.ingest.loaders.decoding import check_not_binary
from evigraph.models import LoadedDocument
from evigraph.surrogates import surrogate_at

_RECORD_HINT = 'each line must be a JSON object like {"id": "a1", "title": "...", "text": "..."}'
_UNICODE_HINT = 'write the character itself or a valid escape pair (e.g. "\\ud83d\\ude00")'

Record = LoadedDocument | RejectedRecord


class _Rejected(Exception):
    """A record that cannot be ingested; `key` is its id when that much could be read."""

    def __init__(self, message: str, hint: str, key: str | None = None) -> None:
        super().__init__(f"{message} ({hint})")
        self.key = key


class JsonlLoader(LoaderStrategy):
    """One document per non-blank line: `id` (the key), `title`, `text`, optional `metadata`.

    A record without `id` is keyed `<file key>#<line number>`, which is stable only while lines
    are not inserted above it; give records ids when the file will be re-ingested.
    """

    name = "jsonl"
    extensions = (".jsonl",)

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes

    def load(self, path: Path, key: str) -> list[LoadedDocument]:
        return _all_or_nothing(self.stream(path, key))

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        return _all_or_nothing(self.stream_bytes(data, path, key))

    def stream(self, path: Path, key: str) -> Iterator[Record]:
        path = Path(path)
        yield from self._records(iter_lines(path, self.max_bytes), path, key)

    def stream_bytes(self, data: bytes, path: Path, key: str) -> Iterator[Record]:
        path = Path(path)
        check_not_binary(data, path)
        data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark, as `iter_lines` drops it
        yield from self._records((line.rstrip(b"\n") for line in io.BytesIO(data)), path, key)

    def _records(self, lines: Iterable[bytes], path: Path, key: str) -> Iterator[Record]:
        seen: dict[str, int] = {}  # record key -> line: ids only, so it stays small
        number = 0
        found = False
        for raw in lines:
            # A lone "\r" ended a line when the whole file was normalised; keep the same numbering.
            for part in (raw[:-1] if raw.endswith(b"\r") else raw).split(b"\r"):
                number += 1
                try:
                    line = _decode(part, path, number)
                    if not line.strip():
                        continue
                    found = True
                    doc = self._record(path, key, number, line)
                    if doc.key in seen:
                        raise _Rejected(
                            f"{path}: line {number}: duplicate id {doc.key!r} (first on line {seen[doc.key]})",
                            "give every record a unique id",
                        )
                except _Rejected as exc:
                    found = True
                    yield RejectedRecord(key=exc.key or f"{key}#{number}", line=number, error=str(exc))
                    continue
                seen[doc.key] = number
                yield doc
        if not found:
            raise InputError(f"{path}: empty file (no text)", "add content or leave the file out of the ingest")

    def _record(self, path: Path, key: str, number: int, line: str) -> LoadedDocument:
        where = f"{path}: line {number}"
        try:
            record: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _Rejected(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})", _RECORD_HINT) from exc
        except RecursionError as exc:  # "[[[[..." a few thousand deep
            raise _Rejected(f"{where}: invalid JSON (nested too deeply)", _RECORD_HINT) from exc
        except ValueError as exc:  # a number of over 4,300 digits
            raise _Rejected(f"{where}: invalid JSON ({str(exc).split(';')[0]})", _RECORD_HINT) from exc
        if not isinstance(record, dict):
            raise _Rejected(f"{where}: expected a JSON object, got {type(record).__name__}", _RECORD_HINT)

        raw_id = record.get("id")
        doc_key: str | None = None
        if raw_id is None:
            doc_key = None
        elif isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id).strip():
            doc_key = str(raw_id).strip()
            if (at := surrogate_at(doc_key)) is not None:
                raise _Rejected(f"{where}: id has an invalid character (a lone surrogate at {at})", _UNICODE_HINT)
        else:
            raise _Rejected(f"{where}: id must be a non-empty string or integer", _RECORD_HINT)

        body = record.get("text")
        if not isinstance(body, str):
            problem = "has no text field" if body is None else "text is not a string"
            raise _Rejected(f"{where}: record {problem}", _RECORD_HINT, doc_key)
        if not body.strip():
            raise _Rejected(f"{where}: record text is empty", "remove the record or give it text", doc_key)
        body = body.replace("\r\n", "\n").replace("\r", "\n")

        title = record.get("title")
        if title is not None and not isinstance(title, str):
            raise _Rejected(f"{where}: title is not a string", _RECORD_HINT, doc_key)
        metadata = _metadata(record.get("metadata"), where, doc_key)
        if any(surrogate_at(name) is not None for name in metadata):
            raise _Rejected(f"{where}: a metadata name has an invalid character", _UNICODE_HINT, doc_key)
        for field, value in (("text", body), ("title", title or ""), *metadata.items()):
            if (at := surrogate_at(value)) is not None:
                raise _Rejected(
                    f"{where}: {field} has an invalid character (a lone surrogate at offset {at})",
                    _UNICODE_HINT,
                    doc_key,
                )

        doc_key = doc_key or f"{key}#{number}"
        return self.document(doc_key, path, (title or "").strip() or doc_key, body, metadata=metadata)


def _decode(part: bytes, path: Path, number: int) -> str:
    try:
        return part.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Rejected(
            f"{path}: line {number}: not valid UTF-8 (byte 0x{part[exc.start]:02x} at column {exc.start + 1})",
            "convert the file to UTF-8, e.g. iconv -f LATIN1 -t UTF-8",
        ) from exc


def _all_or_nothing(records: Iterable[Record]) -> list[LoadedDocument]:
    documents: list[LoadedDocument] = []
    for item in records:
        if isinstance(item, RejectedRecord):
            raise InputError(item.error)
        documents.append(item)
    return documents


def _metadata(value: Any, where: str, key: str | None) -> dict[str, str]:
    """Keep scalar metadata as strings; nested values have no place in a flat string map."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Rejected(f"{where}: metadata must be a JSON object", _RECORD_HINT, key)
    out: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, str):
            out[str(name)] = item
        elif isinstance(item, bool | int | float):
            out[str(name)] = json.dumps(item)
    return out
