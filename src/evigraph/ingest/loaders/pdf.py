"""PDF: the extracted text of every page, with where each page starts.

Page starts let every chunk say which page it came from, so a citation can send the reader to
"page 12" of the original. pypdf is imported only when a PDF is actually loaded, keeping start-up
fast for text-only knowledge bases. PDFs fail in ways text files do not — encryption, corrupt
cross-reference tables, scans without a text layer — and each becomes an `InputError` whose hint
names the tool that fixes it.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from evigraph.errors import InputError
from evigraph.ingest.loaders.common import FileLoader
from evigraph.models import LoadedDocument

PAGE_SEPARATOR = "\n\n"
"""Between pages: a paragraph break, so no sentence runs across a page boundary by accident."""

_ENCRYPTED_HINT = "decrypt it first (qpdf --decrypt --password=PASSWORD in.pdf out.pdf)"
_MALFORMED_HINT = "repair it first (qpdf in.pdf repaired.pdf) or re-export it from the source"
_SCANNED_HINT = "it looks scanned; run OCR first (ocrmypdf in.pdf out.pdf) and ingest the result"


class PdfLoader(FileLoader):
    """One document per file; pages are joined with a blank line and recorded in `pages`."""

    name = "pdf"
    extensions = (".pdf",)

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        path = Path(path)
        reader = _open(data, path)
        texts = _page_texts(reader, path)

        parts: list[str] = []
        pages: list[tuple[int, int]] = []
        offset = 0
        for number, page_text in enumerate(texts, start=1):
            if number > 1:
                parts.append(PAGE_SEPARATOR)
                offset += len(PAGE_SEPARATOR)
            pages.append((number, offset))
            parts.append(page_text)
            offset += len(page_text)
        text = "".join(parts)
        if not text.strip():
            raise InputError(f"{path}: PDF has no extractable text ({len(texts)} pages)", _SCANNED_HINT)

        info = _metadata(reader)
        stated = info.pop("title", "")
        title = stated if stated and not placeholder_title(stated) else path.stem
        info["page_count"] = str(len(texts))
        return [self.document(key, path, title, text, pages=tuple(pages), metadata=info)]


def _open(data: bytes, path: Path) -> Any:
    """Open the PDF, unlocking PDFs that only carry an owner password (readable by anyone)."""
    try:
        from pypdf import PdfReader
    except ImportError as exc:  # pragma: no cover - pypdf is a core dependency
        from evigraph.errors import ConfigurationError

        raise ConfigurationError("pypdf is not installed", "pip install pypdf") from exc

    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise InputError(f"{path}: not a PDF (no %PDF header)", _MALFORMED_HINT)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                unlocked = reader.decrypt("")
            except Exception as exc:  # missing AES support, unsupported handler
                raise InputError(f"{path}: PDF is encrypted ({exc})", _ENCRYPTED_HINT) from exc
            if not unlocked:
                raise InputError(f"{path}: PDF is encrypted with a password", _ENCRYPTED_HINT)
        if len(reader.pages) == 0:
            raise InputError(f"{path}: PDF has no pages", _MALFORMED_HINT)
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many types (PdfReadError, ValueError, KeyError...)
        raise InputError(f"{path}: malformed PDF ({exc})", _MALFORMED_HINT) from exc
    return reader


def _page_texts(reader: Any, path: Path) -> list[str]:
    texts: list[str] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            raw = page.extract_text() or ""
        except Exception as exc:
            raise InputError(
                f"{path}: malformed PDF, text of page {number} cannot be extracted ({exc})", _MALFORMED_HINT
            ) from exc
        texts.append(raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip())
    return texts


def _metadata(reader: Any) -> dict[str, str]:
    """Title and author from the document info, when present and plain strings."""
    out: dict[str, str] = {}
    try:
        meta = reader.metadata
    except Exception:
        return out
    if not meta:
        return out
    for field, attr in (("title", "title"), ("author", "author")):
        try:
            value = getattr(meta, attr, None)
        except Exception:
            continue
        if isinstance(value, str) and value.strip():
            out[field] = value.strip()
    return out


_PLACEHOLDER = re.compile(
    r"""^(?:
        .*\.(?:pdf|docx?|odt|rtf|pptx?|xlsx?|txt|tex|indd|qxp)     # a file name: "Binder1.pdf", "report.docx"
      | (?:microsoft\s+(?:word|powerpoint|excel)\s*-\s*.*)           # "Microsoft Word - draft.docx"
      | (?:untitled|no\s+title|title|document|binder|print|scan|slide)\s*-?\s*\d*  # tools' defaults
    )$""",
    re.IGNORECASE | re.VERBOSE,
)


def placeholder_title(title: str) -> bool:
    """Whether a PDF's metadata title is what a tool wrote by default, not what the author named it.

    Binders, printers and office suites fill the title with a file name ("Binder1.pdf") or their
    own default; shown as the document's title it hides the file name a reader would recognise.
    """
    return bool(_PLACEHOLDER.match(title.strip()))
