"""Nothing a folder walk passes over is silent: skipped types are counted, include/exclude globs obeyed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.ingest.loaders import SUPPORTED_EXTENSIONS
from evigraph.ingest.sources import FileFilter, collect_sources, describe_extensions
from evigraph.kb import KnowledgeBase
from evigraph.tools.toolkit import Toolkit
from evigraph.tools.write_tools import IngestResult

TEXT = "Marta Oliveira founded Harbor Lab in Lisbon in 2014."


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A documentation folder as users have them: pages, sources, configs, images, drafts."""
    root = tmp_path / "site"
    for rel in ("index.md", "guide/install.md", "guide/old/legacy.md", "drafts/wip.md", "notes.txt", "about.html"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {Path(rel).stem}\n\n{TEXT}\n", encoding="utf-8")
    for rel in ("app.py", "guide/conf.py", "tools/build.py", "mkdocs.yml", "data.json", "Makefile"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n", encoding="utf-8")
    (root / "img").mkdir()
    (root / "img" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: main\n", encoding="utf-8")  # hidden: never counted
    return root


def _names(found: list[Path]) -> list[str]:
    return sorted(p.name for p in found)


def test_a_walk_counts_what_no_loader_reads_by_extension(mixed: Path) -> None:
    found = collect_sources([str(mixed)], SUPPORTED_EXTENSIONS)
    assert not found.failures
    assert _names([f.path for f in found.files]) == [
        "about.html",
        "index.md",
        "install.md",
        "legacy.md",
        "notes.txt",
        "wip.md",
    ]
    assert found.skipped_by_extension() == {".py": 3, "": 1, ".json": 1, ".png": 1, ".yml": 1}
    assert found.excluded == 0
    assert describe_extensions(found.skipped) == ".py 3, (no extension) 1, .json 1, .png 1, .yml 1"
    assert describe_extensions(found.skipped, limit=2) == ".py 3, (no extension) 1, +3 more types (3 files)"


@pytest.mark.parametrize(
    ("include", "exclude", "taken", "skipped"),
    [
        ((), "drafts", {"about.html", "index.md", "install.md", "legacy.md", "notes.txt"}, 7),  # a folder's name
        ((), "guide/old", {"about.html", "index.md", "install.md", "notes.txt", "wip.md"}, 7),  # a leading path
        ((), "guide/old/", {"about.html", "index.md", "install.md", "notes.txt", "wip.md"}, 7),
        ((), "*.md,*.txt", {"about.html"}, 7),  # comma-separated
        (("*.md",), ("drafts", "**/old/*"), {"index.md", "install.md"}, 0),
        ("guide/*", (), {"install.md", "legacy.md"}, 1),  # '*' crosses folders; guide/conf.py is skipped
        ("**/index.md", (), {"index.md"}, 0),  # '**/' matches at the top too
        ("INDEX.MD", (), set(), 0),  # case-sensitive
    ],
)
def test_include_and_exclude_globs(
    mixed: Path, include: str | tuple[str, ...], exclude: str | tuple[str, ...], taken: set[str], skipped: int
) -> None:
    found = collect_sources([str(mixed)], SUPPORTED_EXTENSIONS, FileFilter.of(include, exclude))
    assert set(_names([f.path for f in found.files])) == taken
    assert not found.failures  # the globs chose to leave files out: no failure
    assert sum(found.skipped.values()) == skipped
    assert found.excluded == 13 - len(taken) - skipped  # every file counted once


def test_an_absolute_glob_matches_the_absolute_path(mixed: Path) -> None:
    select = FileFilter.of(exclude=f"{mixed.as_posix()}/guide")
    names = _names([f.path for f in collect_sources([str(mixed)], SUPPORTED_EXTENSIONS, select).files])
    assert "install.md" not in names and "legacy.md" not in names and "index.md" in names


def test_files_named_directly_are_filtered_too_but_never_by_type(mixed: Path) -> None:
    named = [str(mixed / "app.py"), str(mixed / "index.md"), str(mixed / "notes.txt")]
    found = collect_sources(named, SUPPORTED_EXTENSIONS, FileFilter.of(exclude="*.txt"))
    assert _names([f.path for f in found.files]) == ["app.py", "index.md"]  # a named .py is read as text
    assert found.excluded == 1 and not found.skipped


def test_a_file_skipped_in_one_source_but_named_in_another_is_not_counted(mixed: Path) -> None:
    found = collect_sources([str(mixed), str(mixed / "app.py")], SUPPORTED_EXTENSIONS)
    assert found.skipped[".py"] == 2 and "app.py" in _names([f.path for f in found.files])


def test_a_folder_without_supported_files_fails_saying_what_it_holds(mixed: Path) -> None:
    found = collect_sources([str(mixed / "tools"), str(mixed / "img")], SUPPORTED_EXTENSIONS)
    assert [f.given for f in found.failures] == [str(mixed / "tools"), str(mixed / "img")]
    error = found.failures[0].error
    assert "no supported files in folder" in error and "1 of types no loader reads (.py 1)" in error
    assert "name files of another type directly" in error
    assert found.skipped_by_extension() == {".png": 1, ".py": 1}


def test_a_glob_of_unsupported_files_fails_and_counts_them(mixed: Path) -> None:
    found = collect_sources([f"{mixed}/**/*.py"], SUPPORTED_EXTENSIONS)
    [failure] = found.failures
    assert "no supported files match" in failure.error and ".py 3" in failure.error
    assert found.skipped == {".py": 3}


@pytest.mark.parametrize("bad", ["", " , ", ",,"])
def test_empty_globs_are_ignored(bad: str) -> None:
    assert not FileFilter.of(bad, [bad])


async def test_the_report_lists_skipped_and_excluded_files(mixed: Path, tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([mixed], progress=False, exclude=["drafts"], include="*.md,*.html,*.py")
        assert report.ok, report.failed
        keys = sorted(Path(d.key).name for d in report.documents)
        assert keys == ["about.html", "index.md", "install.md", "legacy.md"]
        assert report.skipped == {".py": 3} and report.skipped_total == 3
        assert report.excluded == 6  # drafts/wip.md, and notes.txt, .yml, .json, .png, Makefile (not included)


async def test_a_missing_path_and_a_folder_of_images_fail_the_rest_ingests(mixed: Path, tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([mixed / "img", tmp_path / "nope", mixed / "index.md"], progress=False)
        failed = {Path(d.key).name: d.error or "" for d in report.failed}
        assert "no supported files in folder" in failed["img"] and ".png 1" in failed["img"]
        assert "no such file or folder" in failed["nope"]
        assert report.counts()["created"] == 1 and report.skipped == {".png": 1}
        assert (await kb.source_status(str(tmp_path / "nope"))).state == "failed"


async def test_the_ingest_tool_reports_skipped_files_of_a_folder(mixed: Path, tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        result = await Toolkit(kb, files_root=mixed).call("ingest", {"files": ["guide", "tools/build.py"]})
    assert isinstance(result, IngestResult)
    assert sorted(Path(d.document_key).name for d in result.documents) == ["build.py", "install.md", "legacy.md"]
    assert result.skipped == {".py": 1}  # guide/conf.py; tools/build.py was named, so read as text
    assert "skipped 1 file no loader reads: .py 1" in result.to_llm_text()
