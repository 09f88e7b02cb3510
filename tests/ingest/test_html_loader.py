"""The HTML loader on real pages: headings become breadcrumbs, what is not the page's text is dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.errors import InputError
from evigraph.ingest.chunking import StructuralChunking
from evigraph.ingest.loaders import HtmlLoader, loader_for, parse_html
from evigraph.kb import KnowledgeBase

DOCS_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Installing Tidewatch - Tidewatch docs</title>
  <style>body { font-family: "SECRET STYLE"; }</style>
  <script>window.analytics = "SECRET SCRIPT <h1>not a heading</h1>";</script>
</head>
<body>
  <header class="md-header"><a href="/">Tidewatch</a> <span>SITE BANNER</span></header>
  <nav class="md-nav"><ul><li><a href="/">Home</a></li><li><a href="/api">NAV LINK</a></li></ul></nav>
  <div role="navigation">ROLE NAV</div>
  <main>
    <article>
      <h1 id="install">Install<a class="headerlink" href="#install">¶</a></h1>
      <p>Tidewatch runs on <b>Linux</b> and
         Windows. <!-- SECRET COMMENT --> It needs Python&nbsp;3.11 &amp; Kuzu.</p>
      <h2>Linux</h2>
      <p>Marta Oliveira packaged Tidewatch for Debian.</p>
      <h3>Debian</h3>
      <ul><li>Add the repository<li>Run apt install tidewatch<ul><li>as root</ul></li></ul>
      <pre><code>$ sudo apt install tidewatch
  --with-sensors
</code></pre>
      <h2>Windows</h2>
      <p>Use the installer from Orca Systems.</p>
      <table><tr><th>Version<th>Released<tr><td>3.0<td>2024</table>
      <p hidden>HIDDEN TEXT</p><p style="display: none">INVISIBLE TEXT</p>
      <footer>Edit this page</footer>
    </article>
  </main>
  <footer class="md-footer">SITE FOOTER Copyright 2024</footer>
</body>
</html>
"""


def _page(tmp_path: Path, markup: str = DOCS_PAGE, name: str = "install.html") -> Path:
    path = tmp_path / name
    path.write_text(markup, encoding="utf-8")
    return path


def test_headings_become_elements_and_chunks_carry_their_breadcrumbs(tmp_path: Path) -> None:
    [doc] = HtmlLoader().load(_page(tmp_path), "k")
    headings = [(e.level, e.text) for e in doc.elements or () if e.kind == "heading"]
    assert headings == [(1, "Install"), (2, "Linux"), (3, "Debian"), (2, "Windows")]
    for e in doc.elements or ():  # offsets point into the text, as the markdown loader's do
        assert doc.text[e.start : e.end] == e.text
    chunks = StructuralChunking(max_tokens=40).chunk(doc)
    crumbs = {c.breadcrumbs: c.text for c in chunks}
    assert "Marta Oliveira packaged" in crumbs[("Install", "Linux")]
    assert "apt install tidewatch" in crumbs[("Install", "Linux", "Debian")]
    assert "Orca Systems" in crumbs[("Install", "Windows")]


def test_scripts_styles_comments_navigation_and_site_chrome_are_dropped(tmp_path: Path) -> None:
    [doc] = HtmlLoader().load(_page(tmp_path), "k")
    for gone in (
        "SECRET STYLE",
        "SECRET SCRIPT",
        "not a heading",
        "SECRET COMMENT",
        "SITE BANNER",
        "NAV LINK",
        "ROLE NAV",
        "SITE FOOTER",
        "HIDDEN TEXT",
        "INVISIBLE TEXT",
        "¶",
        "<",
    ):
        assert gone not in doc.text, gone
    assert "Edit this page" in doc.text  # an article's own footer is the article's
    assert "It needs Python 3.11 & Kuzu." in doc.text  # entities decoded, white space collapsed
    assert "Tidewatch runs on Linux and Windows." in doc.text


def test_lists_tables_and_code_keep_their_shape(tmp_path: Path) -> None:
    [doc] = HtmlLoader().load(_page(tmp_path), "k")
    kinds = {e.kind: e.text for e in doc.elements or ()}
    assert kinds["list"] == "- Add the repository\n- Run apt install tidewatch\n  - as root"
    assert kinds["table"] == "Version | Released\n3.0 | 2024"
    assert kinds["code"] == "$ sudo apt install tidewatch\n  --with-sensors"


@pytest.mark.parametrize(
    ("markup", "title"),
    [
        ("<title>  Page\n title </title><h1>Heading</h1><p>x</p>", "Page title"),
        ("<h2>Sub</h2><h1>First <em>h1</em></h1><p>x</p>", "First h1"),
        ("<p>No headings at all.</p>", "plain"),
        ("<svg><title>icon</title></svg><h1>Real</h1><p>x</p>", "Real"),
    ],
)
def test_title_from_title_then_first_h1_then_file_name(tmp_path: Path, markup: str, title: str) -> None:
    [doc] = HtmlLoader().load(_page(tmp_path, markup, "plain.html"), "k")
    assert doc.title == title


def test_only_main_content_when_the_page_marks_it(tmp_path: Path) -> None:
    markup = '<div class="sidebar">SIDEBAR</div><div role="main"><h1>Body</h1><p>Kept.</p></div><p>AFTER</p>'
    [doc] = HtmlLoader().load(_page(tmp_path, markup), "k")
    assert doc.text == "Body\n\nKept."


def test_broken_markup_still_loads(tmp_path: Path) -> None:
    markup = "<html><body><h1>Top<p>Para one<p>Para <b>two<div>Block</span></i>\n<li>stray item<table><td>cell"
    _, text, elements = parse_html(markup)
    assert [e.kind for e in elements][:1] == ["heading"]
    assert "Para one" in text and "two" in text and "Block" in text and "stray item" in text and "cell" in text


def test_declared_charset_is_used_when_the_bytes_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "ru.html"
    body = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251"><h1>Привет</h1><p>Мир</p>'
    path.write_bytes(body.encode("cp1251"))
    [doc] = HtmlLoader().load(path, "k")
    assert doc.title == "Привет" and "Мир" in doc.text


def test_a_page_without_text_fails_with_a_hint(tmp_path: Path) -> None:
    markup = "<html><head><script>render()</script></head><body><nav>Menu</nav><div id=app></div></body></html>"
    with pytest.raises(InputError) as info:
        HtmlLoader().load(_page(tmp_path, markup), "k")
    assert "no text in the page" in info.value.message and "--exclude" in info.value.hint


def test_binary_named_html_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.html"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(InputError, match="binary"):
        HtmlLoader().load(path, "k")


def test_the_registry_picks_it_for_html_and_htm() -> None:
    assert loader_for("a.html").name == "html" and loader_for("b.HTM").name == "html"


async def test_a_knowledge_base_stores_html_passages_with_breadcrumbs(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([_page(tmp_path)], progress=False)
        assert report.ok, report.failed
        assert kb.store is not None
        rows = await kb.store.cypher_query("MATCH (c:Chunk) RETURN c.text AS text, c.breadcrumbs AS crumbs")
        stored = await kb.documents()
    crumbs = {tuple(r["crumbs"]) for r in rows}
    assert ("Install", "Linux") in crumbs or ("Install", "Linux", "Debian") in crumbs
    assert not any("SECRET" in r["text"] or "NAV LINK" in r["text"] for r in rows)
    assert [d.title for d in stored] == ["Installing Tidewatch - Tidewatch docs"]
