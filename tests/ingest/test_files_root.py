"""Safe file access: every way out of files_root is refused, listing, reading and preview stay bounded,
and a file under the root has the key the command line gives it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from tests.conftest import make_pdf

from evigraph.errors import ConfigurationError, InputError
from evigraph.ingest import files_root as files
from evigraph.ingest.files_root import FilesRoot
from evigraph.ingest.loaders import SUPPORTED_EXTENSIONS
from evigraph.ingest.sources import expand_sources, file_key

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and FIFOs need POSIX")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "notes").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha\n", encoding="utf-8")
    (folder / "notes" / "b.md").write_text("# Beta\n", encoding="utf-8")
    (folder / "notes" / "deep").mkdir()
    (folder / "notes" / "deep" / "c.md").write_text("gamma\n", encoding="utf-8")
    (folder / "notes" / "photo.png").write_bytes(b"\x89PNG\r\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET\n", encoding="utf-8")
    return secret


@pytest.fixture
def fr(root: Path) -> FilesRoot:
    return FilesRoot(root)


# --- paths ---------------------------------------------------------------------------------


def test_relative_normalises_separators_and_dots(fr: FilesRoot) -> None:
    assert fr.relative("notes\\deep/./c.md") == "notes/deep/c.md"
    assert fr.relative("./notes//b.md") == "notes/b.md"


@pytest.mark.parametrize(
    "path",
    ["", "   ", "..", "../x.txt", "notes/../../x.txt", "notes/..\\..\\x", "/etc/passwd", "C:\\x", "c:/x", "a\x00b"],
)
def test_escaping_paths_refused(fr: FilesRoot, path: str) -> None:
    with pytest.raises(InputError) as err:
        fr.relative(path)
    assert err.value.hint


def test_absolute_path_to_a_file_inside_root_is_still_refused(fr: FilesRoot, root: Path) -> None:
    with pytest.raises(InputError, match="absolute"):
        fr.read_bytes(str(root / "a.txt"), max_bytes=None)
    with pytest.raises(InputError, match="absolute"):
        fr.expand([str(root / "a.txt")])


def test_hidden_file_and_hidden_folder_refused_and_never_listed(fr: FilesRoot, root: Path) -> None:
    (root / ".env").write_text("KEY=1\n", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "notes.txt").write_text("hidden\n", encoding="utf-8")
    for path in (".env", ".git/notes.txt", "notes/../.env"):
        with pytest.raises(InputError):
            fr.read_bytes(path, max_bytes=None)
        with pytest.raises(InputError):
            fr.expand([path])
    assert fr.expand(["**/*.txt"]) == ["a.txt"]
    assert all(not s.path.startswith(".") for s in fr.preview().files)


def test_files_are_keyed_by_absolute_path_and_keys_name_them_back(fr: FilesRoot, root: Path, outside: Path) -> None:
    key = file_key(root / "notes" / "b.md")  # the command line's key for the same file
    assert key == "file:" + (root / "notes" / "b.md").resolve().as_posix()
    assert fr.key("notes\\b.md") == fr.key("./notes/b.md") == fr.key(key) == key
    assert fr.relative(key) == "notes/b.md"
    assert fr.expand([key]) == ["notes/b.md"]
    assert fr.read_bytes(key, max_bytes=None) == b"# Beta\n"
    assert fr.relative("file:notes/b.md") == "notes/b.md"  # the relative form keys took before
    for refused in ("file:../x.txt", file_key(outside), "file:" + (root / ".." / "outside" / "secret.txt").as_posix()):
        with pytest.raises(InputError):
            fr.relative(refused)


@posix_only
def test_a_link_inside_the_root_has_its_targets_key(fr: FilesRoot, root: Path) -> None:
    (root / "alias.md").symlink_to(root / "notes" / "b.md")
    assert fr.key("alias.md") == file_key(root / "notes" / "b.md") == file_key(root / "alias.md")


@posix_only
def test_real_file_named_like_an_id_wins(fr: FilesRoot, root: Path) -> None:
    (root / "file:a.txt").write_text("literal\n", encoding="utf-8")
    assert fr.relative("file:a.txt") == "file:a.txt"
    assert fr.read_bytes("file:a.txt", max_bytes=None) == b"literal\n"
    assert fr.relative("file:notes/b.md") == "notes/b.md"


# --- roots ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [Path("/"), Path.home(), Path.home().parent])
def test_broad_roots_refused(bad: Path) -> None:
    with pytest.raises(ConfigurationError, match="too broad"):
        FilesRoot(bad)


def test_missing_root_or_file_root_refused(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x", encoding="utf-8")
    for bad in (tmp_path / "missing", tmp_path / "f.txt"):
        with pytest.raises(ConfigurationError, match="not an existing folder"):
            FilesRoot(bad)


def test_root_stored_resolved(tmp_path: Path, root: Path) -> None:
    assert FilesRoot(tmp_path / "root" / "notes" / "..").root == root.resolve()


def test_replaced_root_is_detected(tmp_path: Path, root: Path) -> None:
    fr = FilesRoot(root)
    root.rename(tmp_path / "moved")
    root.mkdir()
    (root / "a.txt").write_text("impostor\n", encoding="utf-8")
    with pytest.raises(InputError, match="no longer the folder"):
        fr.read_bytes("a.txt", max_bytes=None)
    with pytest.raises(InputError, match="no longer the folder"):
        fr.expand(["a.txt"])


# --- symlinks --------------------------------------------------------------------------------


@posix_only
def test_symlink_to_outside_refused_explicitly_and_skipped_by_globs(fr: FilesRoot, root: Path, outside: Path) -> None:
    (root / "leak.txt").symlink_to(outside)
    with pytest.raises(InputError, match="symbolic link"):
        fr.read_bytes("leak.txt", max_bytes=None)
    with pytest.raises(InputError, match="symbolic link"):
        fr.expand(["leak.txt"])
    assert fr.expand(["*.txt"]) == ["a.txt"]
    assert "leak.txt" not in [s.path for s in fr.preview().files]


@posix_only
def test_symlinked_folder_leading_outside_refused(fr: FilesRoot, root: Path, outside: Path) -> None:
    (root / "linked").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(InputError):
        fr.read_bytes("linked/secret.txt", max_bytes=None)
    with pytest.raises(InputError):
        fr.expand(["linked"])
    with pytest.raises(InputError):
        fr.expand(["linked/*.txt"])
    assert fr.expand(["**/*.txt"]) == ["a.txt"]


@posix_only
def test_symlink_swapped_in_after_expand_is_refused(fr: FilesRoot, root: Path, outside: Path) -> None:
    (root / "notes" / "swap.txt").write_text("harmless\n", encoding="utf-8")
    [rel] = fr.expand(["notes/swap.txt"])
    (root / "notes" / "swap.txt").unlink()
    (root / "notes" / "swap.txt").symlink_to(outside)
    with pytest.raises(InputError, match="symbolic link"):
        fr.read_bytes(rel, max_bytes=None)


@posix_only
def test_folder_swapped_for_symlink_after_expand_is_refused(fr: FilesRoot, root: Path, outside: Path) -> None:
    (outside.parent / "b.md").write_text("OUTSIDE B\n", encoding="utf-8")
    [rel] = fr.expand(["notes/b.md"])
    (root / "notes").rename(root / "old-notes")
    (root / "notes").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(InputError):
        fr.read_bytes(rel, max_bytes=None)


@posix_only
def test_symlink_inside_root_is_readable_and_deduplicated(fr: FilesRoot, root: Path) -> None:
    (root / "alias.txt").symlink_to(root / "notes" / "deep" / "c.md")
    (root / "shortcut").symlink_to(root / "notes" / "deep", target_is_directory=True)
    assert fr.read_bytes("alias.txt", max_bytes=None) == b"gamma\n"
    assert fr.read_bytes("shortcut/c.md", max_bytes=None) == b"gamma\n"
    got = fr.expand(["alias.txt", "notes/deep/c.md", "notes/./deep/c.md", "shortcut/c.md"])
    assert got == ["notes/deep/c.md"]
    assert fr.expand(["**/*"]).count("notes/deep/c.md") == 1


@posix_only
def test_symlink_to_hidden_file_inside_root_refused(fr: FilesRoot, root: Path) -> None:
    (root / ".env").write_text("KEY=1\n", encoding="utf-8")
    (root / "env.txt").symlink_to(root / ".env")
    with pytest.raises(InputError):
        fr.read_bytes("env.txt", max_bytes=None)
    assert fr.expand(["*.txt"]) == ["a.txt"]


# --- special and large files -----------------------------------------------------------------


@posix_only
def test_fifo_refused_without_blocking(fr: FilesRoot, root: Path) -> None:
    os.mkfifo(root / "pipe.txt")
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(fr.read_bytes("pipe.txt", max_bytes=None))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=5)
    if worker.is_alive():  # unblock the reader so the test run can finish
        os.close(os.open(root / "pipe.txt", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO blocked")
    assert len(outcome) == 1 and isinstance(outcome[0], InputError)
    assert "not a regular file" in str(outcome[0])
    with pytest.raises(InputError, match="not a regular file"):
        fr.expand(["pipe.txt"])
    assert fr.expand(["*.txt"]) == ["a.txt"]


def test_folder_refused_by_read_bytes(fr: FilesRoot) -> None:
    with pytest.raises(InputError):
        fr.read_bytes("notes", max_bytes=None)


def test_file_over_max_bytes_refused(fr: FilesRoot, root: Path) -> None:
    (root / "big.txt").write_bytes(b"x" * 100)
    assert fr.read_bytes("big.txt", max_bytes=100) == b"x" * 100
    with pytest.raises(InputError, match="100 bytes") as err:
        fr.read_bytes("big.txt", max_bytes=99)
    assert "max_file_bytes" in err.value.hint


def test_missing_file_named(fr: FilesRoot) -> None:
    with pytest.raises(InputError, match=r"nope\.txt"):
        fr.read_bytes("nope.txt", max_bytes=None)


def test_insecure_fallback_still_refuses_escapes(
    monkeypatch: pytest.MonkeyPatch, fr: FilesRoot, root: Path, outside: Path
) -> None:
    monkeypatch.setattr(files, "_SECURE", False)
    assert fr.read_bytes("notes/b.md", max_bytes=None) == b"# Beta\n"
    if os.name == "posix":
        (root / "leak.txt").symlink_to(outside)
        with pytest.raises(InputError, match="symbolic link"):
            fr.read_bytes("leak.txt", max_bytes=None)


# --- expand --------------------------------------------------------------------------------


def test_literal_name_with_glob_characters_read_as_itself(fr: FilesRoot, root: Path) -> None:
    if os.name != "posix":
        pytest.skip("'*' is not allowed in Windows file names")
    (root / "star*.txt").write_text("star\n", encoding="utf-8")
    (root / "star1.txt").write_text("one\n", encoding="utf-8")
    assert fr.expand(["star*.txt"]) == ["star*.txt"]
    assert fr.read_bytes("star*.txt", max_bytes=None) == b"star\n"
    assert fr.expand(["sta?1.txt"]) == ["star1.txt"]


def test_glob_star_stays_in_folder_and_double_star_spans_depth(fr: FilesRoot) -> None:
    with pytest.raises(InputError, match=r"'\*\.md'"):
        fr.expand(["*.md"])
    assert fr.expand(["notes/*.md"]) == ["notes/b.md"]
    assert fr.expand(["**/*.md"]) == ["notes/b.md", "notes/deep/c.md"]
    assert fr.expand(["notes/**"]) == ["notes/b.md", "notes/deep/c.md"]
    assert fr.expand(["**/[bc].md"]) == ["notes/b.md", "notes/deep/c.md"]
    assert fr.expand(["**/[!b].md"]) == ["notes/deep/c.md"]


def test_globs_and_folders_pick_only_extensions_a_loader_claims(fr: FilesRoot, root: Path) -> None:
    assert fr.expand(["notes"]) == ["notes/b.md", "notes/deep/c.md"]
    assert "notes/photo.png" not in fr.expand(["**/*"])
    assert fr.expand(["notes/photo.png"]) == ["notes/photo.png"]  # named explicitly: the user asked for it
    (root / "notes" / "table.csv").write_text("x,y\n", encoding="utf-8")
    (root / "notes" / "node_modules").mkdir()
    (root / "notes" / "node_modules" / "readme.md").write_text("dependency\n", encoding="utf-8")
    assert fr.expand(["notes"]) == ["notes/b.md", "notes/deep/c.md", "notes/table.csv"]  # as `evigraph ingest notes`
    custom = FilesRoot(root, extensions={".png", ".MD"})  # a knowledge base's custom loaders add theirs
    assert custom.expand(["notes"]) == ["notes/b.md", "notes/deep/c.md", "notes/photo.png"]


def test_pattern_matching_nothing_refused(fr: FilesRoot) -> None:
    with pytest.raises(InputError, match=r"reports/\*\*/\*\.pdf"):
        fr.expand(["a.txt", "reports/**/*.pdf"])
    with pytest.raises(InputError):
        fr.expand([])


def test_more_than_limit_refused_with_count(fr: FilesRoot, root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(51):
        (many / f"f{i:02}.txt").write_text(f"{i}\n", encoding="utf-8")
    assert len(fr.expand(["many/f0*.txt", "many/f1*.txt"])) == 20
    with pytest.raises(InputError, match="51 files matched") as err:
        fr.expand(["many/*.txt"])
    assert "at most 50" in err.value.hint
    assert len(fr.expand(["many"], limit=60)) == 51


def test_walk_is_bounded(monkeypatch: pytest.MonkeyPatch, fr: FilesRoot, root: Path) -> None:
    for i in range(20):
        (root / f"w{i}.txt").write_text("w\n", encoding="utf-8")
    monkeypatch.setattr(files, "MAX_WALK_ENTRIES", 10)
    with pytest.raises(InputError, match="more than 10 entries") as err:
        fr.expand(["**/*.txt"])
    assert "files_root" in err.value.hint


# --- preview -------------------------------------------------------------------------------


def test_preview_pages_cover_every_file_once(fr: FilesRoot, root: Path) -> None:
    for i in range(12):
        (root / "notes" / f"n{i:02}.md").write_text(f"note {i}\n" * 20, encoding="utf-8")
    shown: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = fr.preview(offset, page_chars=300, sample_chars=150)
        assert page.files
        assert len(page.files) == 1 or sum(len(f.sample) for f in page.files) <= 300
        shown.extend(f.path for f in page.files)
        offset = page.next_offset
        pages += 1
    assert pages > 3
    assert page.total_files == 15
    assert shown == sorted(shown) and len(shown) == len(set(shown)) == 15
    assert "notes/photo.png" not in shown


def test_preview_small_text_is_whole(fr: FilesRoot) -> None:
    page = fr.preview()
    a = next(f for f in page.files if f.path == "a.txt")
    assert (a.sample, a.chars, a.chars_estimated, a.bytes, a.error) == ("alpha\n", 6, False, 6, None)
    assert page.next_offset is None and page.root == str(fr.root)


def test_preview_large_text_samples_the_middle(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    lines = ["START_MARKER"]  # equal-length lines, so the middle line is the middle byte
    lines += [f"filler line {i:05} with some words" for i in range(20_000)]
    lines.insert(len(lines) // 2, "MIDDLE_MARKER")
    text = "\n".join(lines) + "\nEND_MARKER\n"
    (folder / "big.txt").write_text(text, encoding="utf-8")
    [sample] = FilesRoot(folder).preview(sample_chars=500).files
    assert "MIDDLE_MARKER" in sample.sample
    assert "START_MARKER" not in sample.sample and "END_MARKER" not in sample.sample
    assert sample.chars_estimated and abs(sample.chars - len(text)) < len(text) * 0.05
    assert len(sample.sample) <= 500
    assert sample.sample.startswith("filler") and sample.sample.endswith("\n")  # cut to whole lines


def test_preview_pdf_samples_a_middle_page(tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make_pdf(folder / "report.pdf", [f"Page {i} talks about topic{i}." for i in range(9)])
    [sample] = FilesRoot(folder).preview().files
    assert sample.error is None
    assert "topic4" in sample.sample
    assert "topic0" not in sample.sample and "topic8" not in sample.sample
    assert sample.chars_estimated and sample.chars > 0


def test_preview_reports_a_broken_file_and_continues(fr: FilesRoot, root: Path) -> None:
    (root / "broken.pdf").write_bytes(b"not a pdf at all")
    page = fr.preview()
    broken = next(f for f in page.files if f.path == "broken.pdf")
    assert broken.error and broken.sample == ""
    assert {f.path for f in page.files} >= {"a.txt", "notes/b.md", "notes/deep/c.md"}


def test_preview_past_the_end_and_bad_arguments(fr: FilesRoot) -> None:
    page = fr.preview(100)
    assert page.files == [] and page.next_offset is None and page.total_files == 3
    with pytest.raises(InputError):
        fr.preview(-1)


def test_the_command_line_and_a_files_root_walk_a_folder_alike(fr: FilesRoot, root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("hidden\n", encoding="utf-8")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.md").write_text("dependency\n", encoding="utf-8")
    (root / "notes" / "log.log").write_text("a log\n", encoding="utf-8")
    found, failures = expand_sources([str(root)], SUPPORTED_EXTENSIONS)
    assert not failures
    assert [f.key for f in found] == sorted(fr.key(rel) for rel in fr.expand(["**/*"]))
    assert len(found) == 4
