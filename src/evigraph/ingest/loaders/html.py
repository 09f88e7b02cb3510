"""HTML: the page's own text, with its headings as structure.

Saved documentation sites, exported wikis and web pages arrive as HTML. What a reader would call
the page's text is kept, as the Markdown loader keeps it: headings become `heading` elements, so
every passage carries its breadcrumbs ("Guide > Install > Linux"); paragraphs, lists, tables and
preformatted code become blocks the structural chunker keeps whole. What is not the page's text
is dropped: scripts, styles, comments, forms' controls, hidden elements, navigation (`<nav>`,
`role="navigation"`) and the site's banner and footer (`<header>`/`<footer>` outside an article
or section, `role="banner"`/`"contentinfo"`). When the page marks its main content (`<main>`,
`role="main"`), only that is kept, so the sidebars of a documentation site do not repeat in every
page's passages.

The standard library's `html.parser` reads the markup: it never rejects broken HTML, and a full
HTML5 tree builder would be a dependency for what a tag stack with the common implied end tags
(`<li>`, `<p>`, `<td>`, `<tr>`) already gets right. The text is rebuilt as lines: a heading is
its title alone, list items start with "- " (or "1. "), table rows join their cells with " | ",
and blocks are separated by a blank line, so offsets, sentences and citations work as for text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from evigraph.errors import InputError
from evigraph.ingest.loaders.common import FileLoader, text_of
from evigraph.models import Element, LoadedDocument

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_DROPPED = frozenset(
    {
        "script",
        "style",
        "template",
        "noscript",
        "nav",
        "svg",
        "canvas",
        "iframe",
        "object",
        "select",
        "button",
        "textarea",
    }
)
_DROPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menu", "menubar", "toolbar"})
_DROPPED_CLASSES = frozenset({"headerlink", "hash-link", "linenos", "sr-only", "visually-hidden"})
"""Heading permalinks (Sphinx, MkDocs, Docusaurus), code line numbers, screen-reader-only labels."""
_SECTIONING = frozenset({"article", "section", "main", "aside"})
"""Inside these, `<header>` and `<footer>` belong to the content, not to the site."""
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "legend", "li", "main", "ol",
        "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
        *_HEADINGS,
    }
)  # fmt: skip
_IMPLIED_END: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # a start tag that ends an open element of the first set, unless one of the second is nearer
    "li": (frozenset({"li"}), frozenset({"ul", "ol"})),
    "dt": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "dd": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "tr": (frozenset({"tr"}), frozenset({"table", "thead", "tbody", "tfoot"})),
    "td": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "th": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    **dict.fromkeys(("thead", "tbody", "tfoot"), (frozenset({"thead", "tbody", "tfoot"}), frozenset({"table"}))),
    **dict.fromkeys(_HEADINGS, (frozenset(_HEADINGS), _BLOCKS - set(_HEADINGS))),  # `<h2>a<h2>b`: two headings
}
_PARAGRAPH_END = (frozenset({"p"}), _BLOCKS - {"p"})
"""Any block start ends an open paragraph (`<p>a<div>` is two blocks), seen past inline elements."""
_PERMALINK_TAIL = re.compile(r"[\s\u00b6\u00a7\u200b]+$")
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@dataclass
class _Open:
    """An element on the stack, and what it changes for the text inside it."""

    tag: str
    dropped: bool = False
    main: bool = False
    group: int = 0  # a list's or table's element, shared by nested lists
    ordered: bool = False
    number: int = 1  # the next item's number, for an ordered list
    item_lines: int = 0  # lines a list item has written, so only its first gets the marker
    cells: list[str] = field(default_factory=list)  # a table row's cells


@dataclass(frozen=True)
class _Unit:
    """One block of output; consecutive units of one list or table make one element."""

    kind: str
    text: str
    level: int
    group: int
    main: bool


class _PageParser(HTMLParser):
    """Collects the page's blocks as `_Unit`s while html.parser walks the markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[_Open] = []
        self.units: list[_Unit] = []
        self.lines: list[list[str]] = [[]]  # the block being read, line by line (a <br> starts one)
        self.title: list[str] = []
        self.in_title = False
        self.titled = False
        self.dropped = 0
        self.main = 0
        self.pre = 0
        self.groups = 0

    # -- html.parser callbacks -------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.in_title:  # a title left open ends at the next tag rather than swallow the page
            self.in_title, self.titled = False, True
        if tag == "title":
            self.in_title = not self.titled and not any(e.tag == "svg" for e in self.stack)
            return
        if tag in _VOID:
            if not self.dropped and tag == "br":
                self.lines.append([])
            elif not self.dropped and tag == "hr":
                self._flush()
            return
        if not self.pre:
            if tag in _BLOCKS:
                self._close_open(*_PARAGRAPH_END)
            if tag in _IMPLIED_END:
                self._close_open(*_IMPLIED_END[tag])
            if tag in _BLOCKS:
                self._flush()
        if tag in ("td", "th") and (row := self._nearest("tr", "table")) is not None and row.tag == "table":
            self._push(_Open("tr"))  # a cell outside a row is in a row of its own, as browsers read it
        element = _Open(tag, dropped=self._drops(tag, attrs), main=_is_main(tag, attrs))
        if tag in ("ul", "ol", "table"):
            outer = self._nearest("ul", "ol") if tag != "table" else None
            element.group = outer.group if outer else self._group()
            element.ordered = tag == "ol"
            element.number = _start(attrs)
        self._push(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self.handle_starttag(tag, attrs)
        # a self-closed element that is not void (<div/>, as XHTML writes it) holds nothing

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            if self.in_title:
                self.in_title, self.titled = False, True
            return
        if not any(e.tag == tag for e in self.stack):
            if tag == "p" and not self.dropped:  # a stray `</p>` ends the text before it
                self._flush()
            return
        if tag == "pre" or (tag in _BLOCKS and not self.pre):
            self._flush()
        while self.stack and self._pop().tag != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.dropped:
            self.lines[-1].append(data)

    def close(self) -> None:
        super().close()
        self._flush()
        while self.stack:  # unclosed elements end with the page; a pending table row is written
            self._pop()
        self._flush()

    # -- the tag stack ---------------------------------------------------------------------------

    def _push(self, element: _Open) -> None:
        self.stack.append(element)
        self.dropped += element.dropped
        self.main += element.main
        self.pre += element.tag == "pre"

    def _drops(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        values = dict(attrs)
        if tag in _DROPPED or "hidden" in values or values.get("aria-hidden") == "true":
            return True
        if (values.get("role") or "").strip().lower() in _DROPPED_ROLES:
            return True
        if not _DROPPED_CLASSES.isdisjoint((values.get("class") or "").split()):
            return True
        if "display:none" in (values.get("style") or "").replace(" ", "").lower():
            return True
        return tag in ("header", "footer") and not any(e.tag in _SECTIONING for e in self.stack)

    def _close_open(self, closes: frozenset[str], stoppers: frozenset[str]) -> None:
        """Close the nearest open element of `closes` (and all inside it) unless a stopper is nearer."""
        for i in range(len(self.stack) - 1, -1, -1):
            tag = self.stack[i].tag
            if tag in closes:
                self._flush()
                while len(self.stack) > i:
                    self._pop()
                return
            if tag in stoppers:
                return

    def _pop(self) -> _Open:
        element = self.stack.pop()
        if not self.dropped:  # counts this element's own drop too
            if element.tag in ("td", "th") and (row := self._nearest("tr")) is not None:
                row.cells.append(" ".join(_collapse(part) for part in self.lines).strip())
                self.lines = [[]]
            elif element.tag == "tr" and any(element.cells):
                table = self._nearest("table")
                self._add("table", " | ".join(element.cells), group=table.group if table else 0)
        self.dropped -= element.dropped
        self.main -= element.main
        self.pre -= element.tag == "pre"
        return element

    def _nearest(self, *tags: str) -> _Open | None:
        return next((e for e in reversed(self.stack) if e.tag in tags), None)

    def _group(self) -> int:
        self.groups += 1
        return self.groups

    # -- blocks ----------------------------------------------------------------------------------

    def _flush(self) -> None:
        """End the block being read: its lines become a unit of the kind the open elements say."""
        lines, self.lines = self.lines, [[]]
        if self.dropped:
            return
        if self.pre:
            code = "\n".join("".join(part) for part in lines).strip("\n").rstrip()
            if code.strip():
                self._add("code", code)
            return
        if self._nearest("td", "th") is not None:
            self.lines = [*lines, []]  # a block inside a table cell is part of the cell's text
            return
        texts = [text for part in lines if (text := _collapse(part))]
        if not texts:
            return
        heading = next((e for e in reversed(self.stack) if e.tag in _HEADINGS), None)
        item = self._nearest("li", "dt", "dd")
        if heading is not None:
            if title := _PERMALINK_TAIL.sub("", " ".join(texts)):
                self._add("heading", title, level=_HEADINGS[heading.tag])
        elif item is not None and item.tag == "li":
            self._list_lines(item, texts)
        else:
            self._add("paragraph", "\n".join(texts))

    def _list_lines(self, item: _Open, texts: list[str]) -> None:
        lists = [e for e in self.stack if e.tag in ("ul", "ol")]
        owner = lists[-1] if lists else None
        indent = "  " * max(0, len(lists) - 1)
        for text in texts:
            if item.item_lines > 0:
                line = f"{indent}  {text}"
            elif owner is not None and owner.ordered:
                line = f"{indent}{owner.number}. {text}"
                owner.number += 1
            else:
                line = f"{indent}- {text}"
            item.item_lines += 1
            self._add("list", line, group=owner.group if owner else 0)

    def _add(self, kind: str, text: str, *, level: int = 0, group: int = 0) -> None:
        self.units.append(_Unit(kind, text, level, group or self._group(), self.main > 0))


def _collapse(parts: list[str]) -> str:
    """One line of flowing text as a browser shows it: runs of white space become one space."""
    return " ".join("".join(parts).replace("\u200b", "").split())


def _is_main(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    return tag == "main" or (dict(attrs).get("role") or "").strip().lower() == "main"


def _start(attrs: list[tuple[str, str | None]]) -> int:
    try:
        return int(dict(attrs).get("start") or 1)
    except ValueError:
        return 1


def declared_charset(data: bytes) -> str | None:
    """The charset a page declares in a `<meta>` of its first KiB, where browsers look for it."""
    m = _META_CHARSET.search(data[:1024])
    return m.group(1).decode("ascii") if m else None


def parse_html(markup: str) -> tuple[str, str, tuple[Element, ...]]:
    """The page's title (from `<title>`, else its first `<h1>`; "" when neither), text and elements."""
    parser = _PageParser()
    try:
        parser.feed(markup)
        parser.close()
    except (AssertionError, ValueError) as exc:  # html.parser's own checks on markup it cannot follow
        raise InputError(f"malformed HTML ({exc})", "repair or re-export the page") from exc
    units = parser.units
    if any(u.main for u in units):
        units = [u for u in units if u.main]
    parts: list[str] = []
    elements: list[Element] = []
    offset = 0
    i = 0
    while i < len(units):
        j = i + 1
        while j < len(units) and units[j].group == units[i].group and units[i].kind in ("list", "table"):
            j += 1
        block = "\n".join(u.text for u in units[i:j])
        if parts:
            parts.append("\n\n")
            offset += 2
        unit = units[i]
        text = unit.text if unit.kind == "heading" else block
        elements.append(Element(kind=unit.kind, text=text, level=unit.level, start=offset, end=offset + len(block)))
        parts.append(block)
        offset += len(block)
        i = j
    title = " ".join("".join(parser.title).split())
    if not title:
        title = next((e.text for e in elements if e.kind == "heading" and e.level == 1), "")
    return title, "".join(parts), tuple(elements)


class HtmlLoader(FileLoader):
    """One document per page; the title is the page's `<title>`, else its first `<h1>`, else the file name."""

    name = "html"
    extensions = (".html", ".htm", ".xhtml")

    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]:
        path = Path(path)
        markup = text_of(data, path, declared=declared_charset(data))
        try:
            title, text, elements = parse_html(markup)
        except InputError as exc:
            raise InputError(f"{path}: {exc.message}", exc.hint) from exc
        if not text.strip():
            raise InputError(
                f"{path}: no text in the page outside scripts, styles and navigation",
                "leave the page out of the ingest (--exclude), or save it after its scripts have filled it in",
            )
        return [self.document(key, path, title or path.stem, text, elements=elements)]
