"""Markdown: text plus the block structure that structural chunking needs.

Headings give every chunk its breadcrumbs and tell the chunker where a section ends; lists and
code blocks are kept whole as raw markdown, because a code line cut away from its block loses its
meaning. A full CommonMark parser would be a dependency for little gain: the line-based scanner
below recognises the blocks that matter for chunking, and gets right the case that breaks naive
splitters — a `#` comment inside a fenced code block is not a heading.

Tables are the exception to "raw markdown": a row such as `| 3.10 | yes |` means nothing once the
header is out of sight, and a passage (or its embedding) often holds a few rows only. So each row
becomes one line that names its columns, `Python: 3.10; Supported: yes`, with the alignment row
gone and escaped pipes (`\\|`) read as pipes. The chunker splits a long table between lines, so
every piece still says what its values are. A table inside a code fence is code, left as written.

Offsets: every element's `start`/`end` point into the returned text, which is the file's text with
each table replaced by its rows as lines. For tables, lists, code and paragraphs
`text[start:end] == element.text`; for a heading the span covers the whole heading markup
(`## Intro ##`, or a setext title with its underline) while `element.text` is the clean title
(`Intro`) used for breadcrumbs.
"""

from __future__ import annotations

import re
from pathlib import Path

from evigraph.ingest.loaders.common import FileLoader, text_of
from evigraph.models import Element, LoadedDocument

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_ATTRIBUTES = re.compile(r"[ \t]*\{[ \t]*[#.][^{}]*\}[ \t]*$")
"""A trailing attribute list (`{ #anchor }`, `{#id .class}`) of MkDocs, Pandoc and kramdown: it
sets the heading's anchor, is never shown to a reader, and would otherwise sit in every title and
breadcrumb of a documentation site."""
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_TABLE_DELIM = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_INDENTED_CODE = re.compile(r"^(?: {4}|\t)")


def heading_title(raw: str) -> str:
    """A heading's text as a reader sees it: trimmed, without a trailing attribute list."""
    return _ATTRIBUTES.sub("", raw.strip()).strip()


def _is_blank(line: str) -> bool:
    return not line.strip()


class _Scanner:
    """Walks the lines once, emitting elements; each method consumes one kind of block."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.starts: list[int] = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1
        self.elements: list[Element] = []

    # -- helpers -------------------------------------------------------------------------------

    def _line_end(self, i: int) -> int:
        return self.starts[i] + len(self.lines[i])

    def _emit(self, kind: str, first: int, last: int, level: int = 0, title: str | None = None) -> None:
        """Add the block spanning lines first..last, trimmed of surrounding white space."""
        start, end = self.starts[first], self._line_end(last)
        while start < end and self.text[start].isspace():
            start += 1
        while end > start and self.text[end - 1].isspace():
            end -= 1
        if end <= start:
            return
        body = self.text[start:end] if title is None else title
        self.elements.append(Element(kind=kind, text=body, level=level, start=start, end=end))

    def _is_table_start(self, i: int) -> bool:
        if i + 1 >= len(self.lines) or "|" not in self.lines[i] or _is_blank(self.lines[i]):
            return False
        nxt = self.lines[i + 1]
        return "|" in nxt and bool(_TABLE_DELIM.match(nxt))

    def _starts_block(self, i: int) -> bool:
        """A line that ends a paragraph even without a blank line before it."""
        line = self.lines[i]
        return bool(
            _ATX.match(line)
            or _FENCE_OPEN.match(line)
            or _THEMATIC.match(line)
            or _LIST_ITEM.match(line)
            or self._is_table_start(i)
        )

    # -- blocks --------------------------------------------------------------------------------

    def scan(self) -> list[Element]:
        i = self._front_matter()
        n = len(self.lines)
        while i < n:
            line = self.lines[i]
            if _is_blank(line):
                i += 1
            elif _FENCE_OPEN.match(line):
                i = self._fenced(i)
            elif m := _ATX.match(line):
                title = heading_title(m.group(2) or "")
                if title:
                    self._emit("heading", i, i, level=len(m.group(1)), title=title)
                i += 1
            elif _THEMATIC.match(line):
                i += 1
            elif _LIST_ITEM.match(line):
                i = self._list(i)
            elif self._is_table_start(i):
                i = self._table(i)
            elif _INDENTED_CODE.match(line):
                i = self._indented_code(i)
            else:
                i = self._paragraph(i)
        return self.elements

    def _front_matter(self) -> int:
        """Skip YAML front matter: it is metadata, and its `---` would read as headings and rules."""
        if not self.lines or self.lines[0].rstrip() != "---":
            return 0
        for j in range(1, len(self.lines)):
            if self.lines[j].rstrip() in ("---", "..."):
                return j + 1
        return 0

    def _fenced(self, i: int) -> int:
        m = _FENCE_OPEN.match(self.lines[i])
        assert m is not None
        fence = m.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(self.lines) and not closing.match(self.lines[j]):
            j += 1
        last = min(j, len(self.lines) - 1)  # an unclosed fence runs to the end, as in CommonMark
        self._emit("code", i, last)
        return last + 1

    def _indented_code(self, i: int) -> int:
        j = i
        last = i
        while j < len(self.lines):
            if _INDENTED_CODE.match(self.lines[j]):
                last = j
            elif not _is_blank(self.lines[j]):
                break
            j += 1
        self._emit("code", i, last)
        return last + 1

    def _table(self, i: int) -> int:
        j = i + 2
        while j < len(self.lines) and not _is_blank(self.lines[j]) and "|" in self.lines[j]:
            j += 1
        self._emit("table", i, j - 1)
        return j

    def _list(self, i: int) -> int:
        last = i
        j = i + 1
        n = len(self.lines)
        while j < n:
            line = self.lines[j]
            if _is_blank(line):
                k = j
                while k < n and _is_blank(self.lines[k]):
                    k += 1
                if k < n and (_LIST_ITEM.match(self.lines[k]) or self.lines[k][:1] in (" ", "\t")):
                    if _THEMATIC.match(self.lines[k]):
                        break
                    j = k
                    continue
                break
            if _THEMATIC.match(line):
                break
            if line[:1] not in (" ", "\t") and not _LIST_ITEM.match(line) and self._starts_block(j):
                break  # an unindented heading, fence or table ends the list
            last = j  # an item, an indented continuation, or a lazy continuation line
            j += 1
        self._emit("list", i, last)
        return last + 1

    def _paragraph(self, i: int) -> int:
        j = i + 1
        n = len(self.lines)
        while j < n:
            line = self.lines[j]
            if _is_blank(line):
                break
            if _SETEXT.match(line):
                title = heading_title(" ".join(part.strip() for part in self.lines[i:j]))
                level = 1 if line.strip()[0] == "=" else 2
                self._emit("heading", i, j, level=level, title=title)
                return j + 1
            if self._starts_block(j):
                break
            j += 1
        self._emit("paragraph", i, j - 1)
        return j


def parse_markdown(text: str) -> tuple[Element, ...]:
    """Block elements of a markdown text, in reading order, with offsets into `text` (tables raw)."""
    return tuple(_Scanner(text).scan())


_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def table_cells(row: str) -> list[str]:
    """The cells of one table row: outer pipes dropped, split at unescaped pipes, `\\|` read as `|`."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(row)]


def table_text(table: str) -> str:
    """A markdown table as lines a reader (or an embedder) understands alone: one per row,
    each cell named by its column (`Header: value`, joined by `; `).

    Empty cells are left out; a cell beyond the header, or under an empty header, is given bare.
    A table with a header and no rows reads as its column names. Each row ends as a sentence
    does: without the full stop, name finders read a name at the end of one row and the first
    cell of the next as one name across the line break ("Marta Oliveira Project: ReefWatch").
    """
    lines = table.split("\n")
    header = table_cells(lines[0])
    rows = []
    for line in lines[2:]:
        cells = [(header[i] if i < len(header) else "", v) for i, v in enumerate(table_cells(line)) if v]
        if cells:
            row = "; ".join(f"{h}: {v}" if h else v for h, v in cells)
            rows.append(row if row.endswith((".", "!", "?")) else row + ".")
    return "\n".join(rows) if rows else "; ".join(h for h in header if h)


_NAMED_CELL = re.compile(r"[^:;\n]{1,80}: \S")
"""One `Header: value` cell of a row `table_text` wrote."""


def holds_table_rows(text: str) -> bool:
    """Whether a passage holds a table: two rows or more as `table_text` writes them (cells named
    `Header: value`, joined by `; `), or as raw markdown (`| a | b |`, stored by an older release
    or read from a plain text file). A table of one row reads as a sentence and is not told apart.
    """
    named = piped = 0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|") and line.count("|") >= 2:
            piped += 1
        elif sum(bool(_NAMED_CELL.match(cell)) for cell in line.split("; ")) >= 2:
            named += 1
    return named >= 2 or piped >= 2


def readable_tables(text: str, elements: tuple[Element, ...]) -> tuple[str, tuple[Element, ...]]:
    """`text` with each table element rewritten by `table_text`, and every element's offsets moved
    to match, so `text[start:end] == element.text` still holds for every non-heading element."""
    if not any(e.kind == "table" for e in elements):
        return text, elements
    parts: list[str] = []
    out: list[Element] = []
    pos = shift = 0
    for el in elements:
        if el.kind != "table":
            out.append(el.model_copy(update={"start": el.start + shift, "end": el.end + shift}))
            continue
        readable = table_text(el.text)
        parts += [text[pos : el.start], readable]
        pos = el.end
        start = el.start + shift
        if readable:  # a table of empty cells says nothing: no element
            out.append(el.model_copy(update={"text": readable, "start": start, "end": start + len(readable)}))
        shift += len(readable) - (el.end - el.start)
    parts.append(text[pos:])
    return "".join(parts), tuple(out)


class MarkdownLoader(FileLoader):
    """One document per file; the title is the first level-1 heading, else the file name."""

    name = "markdown"
    extensions = (".md", ".markdown")

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        path = Path(path)
        raw = text_of(data, path)
        text, elements = readable_tables(raw, parse_markdown(raw))
        title = next((e.text for e in elements if e.kind == "heading" and e.level == 1), path.stem)
        return [self.document(key, path, title, text, elements=elements)]
