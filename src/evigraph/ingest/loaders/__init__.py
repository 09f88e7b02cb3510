"""Loaders turn files into `LoadedDocument`s; `LOADERS` names them and `loader_for` picks one by extension.

The names are imported on first use: a knowledge base that only answers questions (a cold
`evigraph search`, an `evigraph mcp`'s first retrieve) imports its limits and base class from
here and must not load the HTML, Markdown and PDF readers with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.lazy import lazy_exports

if TYPE_CHECKING:
    from evigraph.ingest.loaders.base import LoaderStrategy, RejectedRecord
    from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES, read_bytes, read_text
    from evigraph.ingest.loaders.decoding import assumed_encoding, decode_text
    from evigraph.ingest.loaders.html import HtmlLoader, parse_html
    from evigraph.ingest.loaders.jsonl import JsonlLoader
    from evigraph.ingest.loaders.markdown import MarkdownLoader, parse_markdown
    from evigraph.ingest.loaders.pdf import PdfLoader
    from evigraph.ingest.loaders.registry import LOADERS, SUPPORTED_EXTENSIONS, loader_for
    from evigraph.ingest.loaders.text import TextLoader

__getattr__ = lazy_exports(
    __name__,
    {
        "LoaderStrategy": "evigraph.ingest.loaders.base",
        "RejectedRecord": "evigraph.ingest.loaders.base",
        "DEFAULT_MAX_BYTES": "evigraph.ingest.loaders.common",
        "read_bytes": "evigraph.ingest.loaders.common",
        "read_text": "evigraph.ingest.loaders.common",
        "assumed_encoding": "evigraph.ingest.loaders.decoding",
        "decode_text": "evigraph.ingest.loaders.decoding",
        "HtmlLoader": "evigraph.ingest.loaders.html",
        "parse_html": "evigraph.ingest.loaders.html",
        "JsonlLoader": "evigraph.ingest.loaders.jsonl",
        "MarkdownLoader": "evigraph.ingest.loaders.markdown",
        "parse_markdown": "evigraph.ingest.loaders.markdown",
        "PdfLoader": "evigraph.ingest.loaders.pdf",
        "LOADERS": "evigraph.ingest.loaders.registry",
        "SUPPORTED_EXTENSIONS": "evigraph.ingest.loaders.registry",
        "loader_for": "evigraph.ingest.loaders.registry",
        "TextLoader": "evigraph.ingest.loaders.text",
    },
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "LOADERS",
    "SUPPORTED_EXTENSIONS",
    "HtmlLoader",
    "JsonlLoader",
    "LoaderStrategy",
    "MarkdownLoader",
    "PdfLoader",
    "RejectedRecord",
    "TextLoader",
    "assumed_encoding",
    "decode_text",
    "loader_for",
    "parse_html",
    "parse_markdown",
    "read_bytes",
    "read_text",
]
