"""Loaders on real files: every format, and every way a file can be unusable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from tests.conftest import make_pdf

from evigraph.errors import InputError
from evigraph.ingest.loaders import (
    SUPPORTED_EXTENSIONS,
    HtmlLoader,
    JsonlLoader,
    LoaderStrategy,
    MarkdownLoader,
    PdfLoader,
    TextLoader,
    loader_for,
)
from evigraph.models import LoadedDocument

write_pdf = make_pdf


def encrypt_pdf(src: Path, dst: Path, user_password: str) -> Path:
    writer = PdfWriter()
    for page in PdfReader(src).pages:
        writer.add_page(page)
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="AES-256")
    with dst.open("wb") as fh:
        writer.write(fh)
    return dst


# -- text and the shared checks -----------------------------------------------------------------


def test_text_loader_reads_file_with_identity(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Alice met Bob.\nThey talked.\n", encoding="utf-8")
    [doc] = TextLoader().load(path, "my-key")
    assert doc.text == "Alice met Bob.\nThey talked.\n"
    assert (doc.key, doc.title, doc.path, doc.loader) == ("my-key", "notes", str(path), "text")
    assert doc.elements is None and doc.pages is None


def test_bom_is_stripped_and_newlines_normalised(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfFirst line\r\nSecond line\rThird")
    [doc] = TextLoader().load(path, "k")
    assert doc.text == "First line\nSecond line\nThird"


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        TextLoader().load(tmp_path / "nope.txt", "k")


def test_directory_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="directory"):
        TextLoader().load(tmp_path, "k")


def test_unreadable_file_is_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("hidden", encoding="utf-8")

    def deny(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", deny)  # root ignores chmod, so simulate the denial
    with pytest.raises(InputError, match="permission denied") as info:
        TextLoader().load(path, "k")
    assert "chmod" in info.value.hint


def test_binary_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(InputError, match="binary file"):
        TextLoader().load(path, "k")


def test_undecodable_file_names_offset_encoding_and_iconv(tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes("Да: \u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440".encode("cp1251"))
    with pytest.raises(InputError) as info:
        TextLoader().load(path, "k")
    assert "offset 0" in info.value.message
    assert "--encoding" in info.value.hint and "iconv -f" in info.value.hint


@pytest.mark.parametrize("content", [b"", b"   \n\t\n  "])
def test_empty_or_blank_file_is_rejected(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(InputError, match="empty file"):
        TextLoader().load(path, "k")


def test_oversize_file_hint_names_the_options(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 100, encoding="utf-8")
    assert TextLoader(max_bytes=100).load(path, "k")[0].text == "x" * 100  # the limit is inclusive
    with pytest.raises(InputError, match="limit") as info:
        TextLoader(max_bytes=99).load(path, "k")
    assert "max_file_bytes=" in info.value.hint and "--max-file-mb" in info.value.hint


# -- markdown -----------------------------------------------------------------------------------

MARKDOWN = """\
Intro before any heading.

# User Guide

Welcome to the guide.

## Install

- step one
- step two
  continued

```bash
# this is a shell comment, not a heading
pip install evigraph
```

| OS | Command |
|----|---------|
| Linux | apt |

Setup Notes
-----------

Some notes.
"""


def test_markdown_elements_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    [doc] = MarkdownLoader().load(path, "guide")
    assert doc.loader == "markdown" and doc.title == "User Guide"
    assert doc.elements is not None
    kinds = [(e.kind, e.level) for e in doc.elements]
    assert kinds == [
        ("paragraph", 0),
        ("heading", 1),
        ("paragraph", 0),
        ("heading", 2),
        ("list", 0),
        ("code", 0),
        ("table", 0),
        ("heading", 2),
        ("paragraph", 0),
    ]
    for el in doc.elements:
        raw = doc.text[el.start : el.end]
        if el.kind == "heading":
            assert el.text in raw
        else:
            assert raw == el.text
    headings = [e.text for e in doc.elements if e.kind == "heading"]
    assert headings == ["User Guide", "Install", "Setup Notes"]
    code = next(e for e in doc.elements if e.kind == "code")
    assert "# this is a shell comment" in code.text and code.text.endswith("```")
    table = next(e for e in doc.elements if e.kind == "table")
    assert table.text == "OS: Linux; Command: apt."  # each row names its columns (see the table tests below)
    lst = next(e for e in doc.elements if e.kind == "list")
    assert lst.text == "- step one\n- step two\n  continued"


def test_markdown_without_h1_uses_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "readme-notes.markdown"
    path.write_text("## Only a subsection\n\nText.\n\n```\n# not a title\n```\n", encoding="utf-8")
    [doc] = MarkdownLoader().load(path, "k")
    assert doc.title == "readme-notes"
    assert doc.elements is not None
    assert [e.text for e in doc.elements if e.kind == "heading"] == ["Only a subsection"]


def test_markdown_heading_attribute_lists_stay_out_of_titles_and_breadcrumbs(tmp_path: Path) -> None:
    """MkDocs sites end headings with `{ #anchor }`; a reader never sees it, nor should a citation."""
    path = tmp_path / "first-steps.md"
    path.write_text(
        "# First Steps { #first-steps }\n\nIntro.\n\n## Install {#install .tabbed}\n\nRun it.\n\n"
        "Setext {#setext}\n---\n\nMore.\n\n## Sets {a, b}\n\nBraces that are text stay.\n",
        encoding="utf-8",
    )
    [doc] = MarkdownLoader().load(path, "k")
    assert doc.title == "First Steps"
    assert doc.elements is not None
    assert [e.text for e in doc.elements if e.kind == "heading"] == ["First Steps", "Install", "Setext", "Sets {a, b}"]
    from evigraph.ingest.chunking import StructuralChunking

    crumbs = {tuple(c.breadcrumbs) for c in StructuralChunking().chunk(doc)}
    assert crumbs == {
        ("First Steps",),
        ("First Steps", "Install"),
        ("First Steps", "Setext"),
        ("First Steps", "Sets {a, b}"),
    }


def test_markdown_unclosed_fence_swallows_rest(tmp_path: Path) -> None:
    path = tmp_path / "open.md"
    path.write_text("# Top\n\n```\n# inside\n\nmore\n", encoding="utf-8")
    [doc] = MarkdownLoader().load(path, "k")
    assert doc.elements is not None
    assert [e.kind for e in doc.elements] == ["heading", "code"]


def test_markdown_front_matter_is_not_structure(tmp_path: Path) -> None:
    path = tmp_path / "fm.md"
    path.write_text("---\ntitle: x\n---\n# Real Title\n\nBody.\n", encoding="utf-8")
    [doc] = MarkdownLoader().load(path, "k")
    assert doc.title == "Real Title"
    assert doc.elements is not None
    assert [e.kind for e in doc.elements] == ["heading", "paragraph"]


TABLES = """\
# Releases

| Version | Python | Notes |
|:--------|-------:|:-----:|
| 3.0 | 3.11 | uses `a \\| b` pipes |
| 2.1 |  | end of life |

Between the tables.

```markdown
| Not | A table |
|-----|---------|
| kept | as code |
```

   | Key | Value | |
   | --- | --- | --- |
   | depth | 3 | extra |

After.
"""


def test_markdown_table_rows_name_their_columns(tmp_path: Path) -> None:
    path = tmp_path / "releases.md"
    path.write_text(TABLES, encoding="utf-8")
    [doc] = MarkdownLoader().load(path, "k")
    assert doc.elements is not None
    tables = [e.text for e in doc.elements if e.kind == "table"]
    assert tables == [
        # one line per row, each cell with its header; the alignment row gone; `\\|` read as a pipe;
        # an empty cell left out
        "Version: 3.0; Python: 3.11; Notes: uses `a | b` pipes.\nVersion: 2.1; Notes: end of life.",
        "Key: depth; Value: 3; extra.",  # a cell under an empty header is given bare
    ]
    code = next(e for e in doc.elements if e.kind == "code")
    assert "| Not | A table |\n|-----|---------|\n| kept | as code |" in code.text  # a fenced table is code
    for el in doc.elements:  # offsets follow the rewritten text, before and after each table
        if el.kind != "heading":
            assert doc.text[el.start : el.end] == el.text
    assert doc.text.endswith("\nAfter.\n") and "|---" not in doc.text.split("```")[0]
    assert [e.text for e in doc.elements if e.kind == "paragraph"] == ["Between the tables.", "After."]


def test_a_table_row_read_alone_still_says_what_its_values_are(tmp_path: Path) -> None:
    from evigraph.ingest.chunking import StructuralChunking

    rows = "\n".join(f"| Station {i} | {10 + i} m | {'yes' if i % 2 else 'no'} |" for i in range(40))
    path = tmp_path / "stations.md"
    path.write_text(f"# Stations\n\n| Name | Depth | Heated |\n|---|---|---|\n{rows}\n", encoding="utf-8")
    [doc] = MarkdownLoader().load(path, "k")
    chunks = StructuralChunking(max_tokens=60).chunk(doc)
    table_lines = [line for c in chunks for line in c.text.splitlines() if "Station " in line]
    assert len({c.index for c in chunks}) > 2 and len(table_lines) == 40
    for line in table_lines:
        assert line.startswith("Name: Station ") and "; Depth: " in line and "; Heated: " in line


# -- pdf ----------------------------------------------------------------------------------------


def test_pdf_pages_and_offsets(tmp_path: Path) -> None:
    path = write_pdf(
        tmp_path / "report.pdf",
        ["Alpha page text. Alice works at Acme.", "Beta page text. Bob lives in Paris.", "Gamma ends it."],
    )
    [doc] = PdfLoader().load(path, "report")
    assert doc.loader == "pdf" and doc.key == "report" and doc.title == "report"
    assert doc.pages is not None
    assert [n for n, _ in doc.pages] == [1, 2, 3]
    assert doc.pages[0][1] == 0
    for word, page in (("Alpha", 1), ("Beta", 2), ("Gamma", 3)):
        offset = doc.text.index(word)
        assert doc.page_at(offset) == page
        assert doc.pages[page - 1][1] == offset  # each page starts with its own text
    assert doc.text[doc.pages[1][1] - 2 : doc.pages[1][1]] == "\n\n"
    assert doc.metadata["page_count"] == "3"


def test_pdf_with_user_password_is_rejected(tmp_path: Path) -> None:
    plain = write_pdf(tmp_path / "plain.pdf", ["Confidential text."])
    locked = encrypt_pdf(plain, tmp_path / "locked.pdf", user_password="secret")
    with pytest.raises(InputError, match="encrypted") as info:
        PdfLoader().load(locked, "k")
    assert "qpdf --decrypt" in info.value.hint


def test_pdf_with_owner_password_only_still_loads(tmp_path: Path) -> None:
    plain = write_pdf(tmp_path / "plain.pdf", ["Readable by anyone."])
    restricted = encrypt_pdf(plain, tmp_path / "restricted.pdf", user_password="")
    [doc] = PdfLoader().load(restricted, "k")
    assert "Readable by anyone." in doc.text


@pytest.mark.parametrize("content", [b"this is not a pdf at all \x01\x02", b"%PDF-1.7\n garbage garbage \n%%EOF"])
def test_malformed_pdf_is_input_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        PdfLoader().load(path, "k")
    assert "PDF" in info.value.message
    assert "qpdf" in info.value.hint


def test_pdf_without_text_hints_at_ocr(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(10, 10, 100, 50, style="F")  # a "scan": drawing only, no text layer
    path = tmp_path / "scan.pdf"
    pdf.output(str(path))
    with pytest.raises(InputError, match="no extractable text") as info:
        PdfLoader().load(path, "k")
    assert "OCR" in info.value.hint


def test_pdf_size_limit_applies(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "small.pdf", ["Some text."])
    with pytest.raises(InputError, match="limit"):
        PdfLoader(max_bytes=100).load(path, "k")


# -- jsonl --------------------------------------------------------------------------------------


def test_jsonl_one_document_per_record(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [
        json.dumps({"id": "a1", "title": "First", "text": "Alice met Bob.", "metadata": {"lang": "en"}}),
        "",
        "   ",
        json.dumps({"id": 7, "text": "Untitled record.", "metadata": {"year": 2020, "nested": {"x": 1}}}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs = JsonlLoader().load(path, "file-key")
    assert [d.key for d in docs] == ["a1", "7"]
    assert [d.title for d in docs] == ["First", "7"]
    assert docs[0].text == "Alice met Bob." and docs[0].metadata == {"lang": "en"}
    assert docs[1].metadata == {"year": "2020"}
    assert all(d.loader == "jsonl" and d.path == str(path) for d in docs)


def test_jsonl_record_without_id_is_keyed_by_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"text": "one"}\n\n{"text": "three"}\n', encoding="utf-8")
    assert [d.key for d in JsonlLoader().load(path, "src")] == ["src#1", "src#3"]


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("{not json", "line 2: invalid JSON"),
        ('{"id": "b", "title": "no text"}', "line 2: record has no text"),
        ('{"id": "b", "text": 5}', "line 2: record text is not a string"),
        ('["a", "list"]', "line 2: expected a JSON object"),
        ('{"id": "a", "text": "dup"}', "line 2: duplicate id 'a'"),
        ('{"id": "b", "text": "ok", "metadata": [1]}', "line 2: metadata must be"),
    ],
)
def test_jsonl_bad_line_names_line_number(tmp_path: Path, line: str, pattern: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=pattern):
        JsonlLoader().load(path, "k")


# -- registry -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "loader"),
    [
        ("a.pdf", "pdf"),
        ("A.PDF", "pdf"),
        ("b.md", "markdown"),
        ("b.markdown", "markdown"),
        ("c.jsonl", "jsonl"),
        ("d.txt", "text"),
        ("e.rst", "text"),
        ("f.csv", "text"),
        ("no_extension", "text"),
    ],
)
def test_loader_for_picks_by_extension(name: str, loader: str) -> None:
    assert loader_for(Path(name)).name == loader


def test_loader_for_prefers_user_loaders_and_passes_limit(tmp_path: Path) -> None:
    class HtmlLoader(LoaderStrategy):
        name = "html"
        extensions = (".html", "md")

        def load(self, path: Path, key: str) -> list[LoadedDocument]:
            return []

    custom = HtmlLoader()
    assert loader_for("page.html", [custom]) is custom
    assert loader_for("notes.md", [custom]) is custom
    assert loader_for("page.htm", {".htm": custom}) is custom
    assert loader_for("x.pdf", [custom]).name == "pdf"
    limited = loader_for("x.txt", max_bytes=5)
    path = tmp_path / "x.txt"
    path.write_text("more than five bytes", encoding="utf-8")
    with pytest.raises(InputError, match="limit"):
        limited.load(path, "k")


def test_supported_extensions_cover_the_loaders() -> None:
    for ext in (".txt", ".text", ".md", ".markdown", ".rst", ".pdf", ".jsonl", ".csv", ".log"):
        assert ext in SUPPORTED_EXTENSIONS
    assert ".html" in SUPPORTED_EXTENSIONS and ".htm" in SUPPORTED_EXTENSIONS
    assert ".png" not in SUPPORTED_EXTENSIONS and ".py" not in SUPPORTED_EXTENSIONS
    for loader in (TextLoader(), MarkdownLoader(), PdfLoader(), JsonlLoader(), HtmlLoader()):
        assert set(loader.extensions) <= SUPPORTED_EXTENSIONS


@pytest.mark.parametrize(
    ("stated", "shown"),
    [
        ("Binder1.pdf", "tide-report"),
        ("Microsoft Word - draft.docx", "tide-report"),
        ("Untitled", "tide-report"),
        ("Tide Report 2024", "Tide Report 2024"),
    ],
)
def test_pdf_placeholder_titles_give_way_to_the_file_name(tmp_path: Path, stated: str, shown: str) -> None:
    pdf = FPDF()
    pdf.set_title(stated)
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="TideScope stores its readings in Kuzu.")
    path = tmp_path / "tide-report.pdf"
    pdf.output(str(path))
    [doc] = PdfLoader().load(path, "k")
    assert doc.title == shown


@pytest.mark.parametrize("extractor", ["rules", "spacy"])
async def test_a_name_ending_a_table_row_stays_apart_from_the_next_row(tmp_path: Path, extractor: str) -> None:
    """Rows are sentences: a lead named at the end of one row and a project at the start of the
    next were read as one name ("Marta Oliveira Project: ReefWatch") before rows ended with a stop."""
    from evigraph import KnowledgeBase
    from evigraph.ingest.extraction import EXTRACTORS

    if not EXTRACTORS.get(extractor).available:
        pytest.skip(f"the {extractor} extractor is not installed")
    path = tmp_path / "projects.md"
    path.write_text(
        "# Projects\n\n| Project | Lead |\n|---|---|\n| TideScope | Marta Oliveira |\n| ReefWatch | Ana Costa |\n",
        encoding="utf-8",
    )
    async with KnowledgeBase(tmp_path / "kb.db", embedder="none", extractor=extractor) as kb:
        assert (await kb.ingest(path)).ok
        found = await kb.search_entities("Marta Oliveira ReefWatch Ana Costa", limit=20)
        names = {card.name for card in found.hits}
    assert "Marta Oliveira" in names
    assert not any("\n" in n or ("Oliveira" in n and "ReefWatch" in n) for n in names), names
