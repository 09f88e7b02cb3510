"""One document cannot fill the top of a retrieve while other documents match, and release notes
wait behind the guide, unless the question asks about releases."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.evidence.items import PassageItem, Source
from evigraph.retrieval.diversity import diversify, is_changelog


def passage(doc: str, n: int, title: str = "Guide") -> PassageItem:
    return PassageItem(id=f"{doc}:{n}", text="x", source=Source(document_key=f"file:{doc}", title=title, path=doc))


def test_no_document_takes_more_than_two_of_the_top_places_while_others_match() -> None:
    ranked = [passage("a.md", i) for i in range(5)] + [passage("b.md", 0), passage("c.md", 0)]
    top = diversify(ranked, "how do sessions work?", 5, cap=2)
    assert [p.id for p in top] == ["a.md:0", "a.md:1", "b.md:0", "c.md:0", "a.md:2"]


def test_a_document_alone_still_fills_the_list() -> None:
    ranked = [passage("a.md", i) for i in range(5)]
    assert diversify(ranked, "sessions?", 5, cap=2) == ranked


def test_a_cap_of_zero_keeps_the_ranking() -> None:
    ranked = [passage("a.md", i) for i in range(4)] + [passage("b.md", 0)]
    assert diversify(ranked, "sessions?", 3, cap=0) == ranked[:3]


def test_changelogs_come_after_guides_unless_the_question_is_about_releases() -> None:
    notes = [passage("docs/release-notes.md", 0, "Release Notes"), passage("CHANGES.rst", 0, "Changes")]
    guide = [passage("docs/sessions.md", 0, "Sessions")]
    assert [p.id for p in diversify([*notes, *guide], "How do I use sessions?", 3, cap=2)] == [
        "docs/sessions.md:0",
        "docs/release-notes.md:0",
        "CHANGES.rst:0",
    ]
    asked = diversify([*notes, *guide], "What changed in version 0.21?", 3, cap=2)
    assert asked[0].id == "docs/release-notes.md:0"


@pytest.mark.parametrize(
    ("path", "title", "expected"),
    [
        ("CHANGELOG.md", "Changelog", True),
        ("docs/release-notes.md", "Release Notes", True),
        ("HISTORY.rst", "History", True),
        ("docs/history-of-python.md", "History of Python", False),
        ("docs/news-feed.md", "A news feed app", False),
        ("docs/changes-to-routing.md", "Routing", False),
    ],
)
def test_what_counts_as_a_changelog(path: str, title: str, expected: bool) -> None:
    item = PassageItem(id="p", text="x", source=Source(document_key=f"file:{path}", title=title, path=path))
    assert is_changelog(item) is expected


async def test_a_retrieve_spreads_its_top_five_over_the_documents_that_match(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    sections = "\n\n".join(
        f"## Middleware {i}\n\nMiddleware wraps the application; middleware {i} adds headers." for i in range(8)
    )
    (docs / "middleware.md").write_text(f"# Middleware\n\n{sections}\n")
    (docs / "cors.md").write_text("# CORS\n\nThe CORS middleware adds the cross-origin headers to responses.\n")
    (docs / "release-notes.md").write_text("# Release notes\n\n## 0.21\n\nMiddleware headers are added once.\n")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
        await kb.ingest(docs)
        result = await kb.retrieve("How does middleware add headers?", top_k=5)
    files = [Path(p.source.path or "").name for p in result.passages]
    assert files[:4].count("middleware.md") == 2 and len(files) == 5  # the rest once the others had a turn
    assert files.index("cors.md") < files.index("release-notes.md") < 4
