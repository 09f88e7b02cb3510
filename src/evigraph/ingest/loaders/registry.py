"""Choosing a loader for a file.

The choice is by extension only: sniffing content would make the same file load differently
depending on its first bytes, and a user can always force a loader by passing their own. Unknown
extensions get the text loader, whose binary and encoding checks reject what is not text with a
clear message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from evigraph.ingest.loaders.base import LoaderStrategy
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES
from evigraph.ingest.loaders.html import HtmlLoader
from evigraph.ingest.loaders.jsonl import JsonlLoader
from evigraph.ingest.loaders.markdown import MarkdownLoader
from evigraph.ingest.loaders.pdf import PdfLoader
from evigraph.ingest.loaders.text import TextLoader
from evigraph.strategies import Registry

LOADERS: Registry[LoaderStrategy] = Registry("loader")
"""Built-in loaders by name; each claims the extensions its class declares. Factories take `max_bytes`."""
for _loader, _description in (
    (TextLoader, "plain text, one document per file; UTF-8, UTF-16 and Latin-1 read, binary files refused"),
    (MarkdownLoader, "Markdown, one document per file, with headings, lists and tables kept as structure"),
    (PdfLoader, "the text layer of a PDF, page by page, so passages cite their page; scans need OCR first"),
    (JsonlLoader, "one document per JSON line (id, title, text, metadata); a bad line is rejected alone"),
    (HtmlLoader, "a web page's text with its headings as structure; scripts, styles and navigation left out"),
):
    LOADERS.register(_loader.name, _loader, description=_description, extensions=_loader.extensions)

SUPPORTED_EXTENSIONS: frozenset[str] = LOADERS.extensions()
"""Extensions a folder walk picks up; other files are skipped unless named explicitly."""


def loader_for(
    path: Path | str,
    loaders: Iterable[LoaderStrategy] | Mapping[str, LoaderStrategy] | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> LoaderStrategy:
    """The loader for `path`: a user loader claiming its extension first, else the built-in one.

    `loaders` is either loader instances (matched by their `extensions`) or a mapping from
    extension (".html") to loader. `max_bytes` configures the built-in loaders only.
    """
    suffix = Path(path).suffix.lower()
    if loaders is not None:
        if isinstance(loaders, Mapping):
            for ext, loader in loaders.items():
                if _norm_ext(ext) == suffix:
                    return loader
        else:
            for loader in loaders:
                if suffix in (_norm_ext(e) for e in loader.extensions):
                    return loader
    entry = LOADERS.for_extension(suffix) if suffix else None
    return (entry or LOADERS.get(TextLoader.name)).factory(max_bytes)


def _norm_ext(ext: str) -> str:
    ext = ext.lower()
    return ext if ext.startswith(".") else f".{ext}"
