"""The loader contract: a source in, one or more documents out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from evigraph.models import LoadedDocument


class LoaderStrategy(ABC):
    """Reads a file into documents.

    Most formats give one document per file; record formats (JSONL) give one per record, so
    `load` returns a list. Raise `evigraph.errors.InputError` with a hint for input that cannot be
    read; the pipeline turns it into a `failed` outcome for that file and goes on with the rest.

    Example::

        class HtmlLoader(LoaderStrategy):
            name = "html"
            extensions = (".html",)

            def load(self, path: Path, key: str) -> list[LoadedDocument]:
                text = strip_tags(read_text(path))
                return [LoadedDocument(key=key, title=path.stem, path=str(path), text=text, loader=self.name)]
    """

    name: str = "custom"
    extensions: tuple[str, ...] = ()

    @abstractmethod
    def load(self, path: Path, key: str) -> list[LoadedDocument]:
        """Read `path`; `key` is the document key the caller chose for the file."""

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        """Parse a file's content already read by the caller (`path` names it in messages and metadata).

        The toolkit reads files itself, through a handle opened without following symlinks, so
        a loader must not reopen the path. Built-in loaders implement this; a custom loader that
        does not is refused there with this error.
        """
        from evigraph.errors import InputError

        raise InputError(
            f"{path}: the {self.name!r} loader can only read from a path",
            hint="implement load_bytes() on the loader to ingest through the toolkit",
        )
