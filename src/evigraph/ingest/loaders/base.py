"""The loader contract: a source in, one or more documents out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evigraph.models import Element, LoadedDocument


@dataclass(frozen=True)
class RejectedRecord:
    """One record of a many-record file that cannot be ingested; the file's other records still are.

    `key` is the record's id when it could be read, else `<file key>#<line>`, so the failure
    is logged where `source_status` of that record will look for it.
    """

    key: str
    line: int
    error: str


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
                return [self.document(key, path, path.stem, text)]
    """

    name: str = "custom"
    extensions: tuple[str, ...] = ()

    @abstractmethod
    def load(self, path: Path, key: str) -> list[LoadedDocument]:
        """Read `path`; `key` is the document key the caller chose for the file."""

    def document(
        self,
        key: str,
        path: Path,
        title: str,
        text: str,
        *,
        elements: tuple[Element, ...] | None = None,
        pages: tuple[tuple[int, int], ...] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> LoadedDocument:
        """A document this loader read from `path`: every loader names the file and itself alike,
        so a source's status and the re-ingest check find it whichever format it came from."""
        return LoadedDocument(
            key=key,
            title=title,
            path=str(path),
            text=text,
            loader=self.name,
            elements=elements,
            pages=pages,
            metadata=metadata or {},
        )

    def stream(self, path: Path, key: str) -> Iterator[LoadedDocument | RejectedRecord]:
        """Documents one at a time, as the ingest pipeline reads them.

        Record formats override this so that memory does not grow with the file and one bad
        record is reported (`RejectedRecord`) instead of failing the file; by default it is `load`.
        """
        yield from self.load(path, key)

    def stream_bytes(self, data: bytes, path: Path, key: str) -> Iterator[LoadedDocument | RejectedRecord]:
        """`stream` over content the caller already read (see `load_bytes`)."""
        yield from self.load_bytes(data, path, key)

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
