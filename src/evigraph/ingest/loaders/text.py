"""Plain text: the loader every unrecognised extension falls back to.

Text has no structure a loader can trust, so it returns the text alone and chunking relies on
sentences; the checks in `common` keep binaries and wrongly encoded files out.
"""

from __future__ import annotations

from pathlib import Path

from evigraph.ingest.loaders.common import FileLoader, text_of
from evigraph.models import LoadedDocument


class TextLoader(FileLoader):
    """One document per file, titled by the file name (plain text carries no title)."""

    name = "text"
    extensions = (".txt", ".text", ".rst", ".log", ".csv")

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        path = Path(path)
        text = text_of(data, path)
        return [self.document(key, path, path.stem, text)]
