"""Loaders turn files into `LoadedDocument`s; `LOADERS` names them and `loader_for` picks one by extension."""

from __future__ import annotations

from evigraph.ingest.loaders.base import LoaderStrategy, RejectedRecord
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES, read_bytes, read_text
from evigraph.ingest.loaders.decoding import assumed_encoding, decode_text
from evigraph.ingest.loaders.html import HtmlLoader, parse_html
from evigraph.ingest.loaders.jsonl import JsonlLoader
from evigraph.ingest.loaders.markdown import MarkdownLoader, parse_markdown
from evigraph.ingest.loaders.pdf import PdfLoader
from evigraph.ingest.loaders.registry import LOADERS, SUPPORTED_EXTENSIONS, loader_for
from evigraph.ingest.loaders.text import TextLoader

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
