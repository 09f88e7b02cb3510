"""JSON Lines: many documents in one file, one record a line.

Exports from databases, scrapers and datasets arrive as JSONL. Each record becomes its own
document keyed by the record's `id`, so re-ingesting the export updates records in place instead
of duplicating the whole file. Errors name the line, because "invalid JSON" in a 100,000-line
file is useless without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evigraph.errors import InputError
from evigraph.ingest.loaders.base import LoaderStrategy
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES, read_bytes, text_of
from evigraph.models import LoadedDocument

_RECORD_HINT = 'each line must be a JSON object like {"id": "a1", "title": "...", "text": "..."}'


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
        path = Path(path)
        return self.load_bytes(read_bytes(path, self.max_bytes), path, key)

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        path = Path(path)
        text = text_of(data, path)
        documents: list[LoadedDocument] = []
        seen: dict[str, int] = {}
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            doc = self._record(path, key, number, line)
            if doc.key in seen:
                raise InputError(
                    f"{path}: line {number}: duplicate id {doc.key!r} (first on line {seen[doc.key]})",
                    "give every record a unique id",
                )
            seen[doc.key] = number
            documents.append(doc)
        return documents

    def _record(self, path: Path, key: str, number: int, line: str) -> LoadedDocument:
        where = f"{path}: line {number}"
        try:
            record: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})", _RECORD_HINT) from exc
        if not isinstance(record, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}", _RECORD_HINT)

        body = record.get("text")
        if not isinstance(body, str):
            problem = "has no text field" if body is None else "text is not a string"
            raise InputError(f"{where}: record {problem}", _RECORD_HINT)
        if not body.strip():
            raise InputError(f"{where}: record text is empty", "remove the record or give it text")
        body = body.replace("\r\n", "\n").replace("\r", "\n")

        raw_id = record.get("id")
        if raw_id is None:
            doc_key = f"{key}#{number}"
        elif isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id).strip():
            doc_key = str(raw_id).strip()
        else:
            raise InputError(f"{where}: id must be a non-empty string or integer", _RECORD_HINT)

        title = record.get("title")
        if title is not None and not isinstance(title, str):
            raise InputError(f"{where}: title is not a string", _RECORD_HINT)

        return LoadedDocument(
            key=doc_key,
            title=(title or "").strip() or doc_key,
            path=str(path),
            text=body,
            loader=self.name,
            elements=None,
            pages=None,
            metadata=_metadata(record.get("metadata"), where),
        )


def _metadata(value: Any, where: str) -> dict[str, str]:
    """Keep scalar metadata as strings; nested values have no place in a flat string map."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: metadata must be a JSON object", _RECORD_HINT)
    out: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, str):
            out[str(name)] = item
        elif isinstance(item, bool | int | float):
            out[str(name)] = json.dumps(item)
    return out
