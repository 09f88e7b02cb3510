"""Safe file access for an agent allowed to read files under one user-chosen folder.

The knowledge base reads an agent's files through `FilesRoot` (`KnowledgeBase.ingest_files(...,
root=)`); the agent names them relative to the root (`notes/a.md`), or by the document key a
tool handed out (`file:` + its root's name + its path, see `evigraph.ingest.roots`), and the
root maps both to that one key, so a file has the same key whoever ingested it.

An agent's path comes from a model that may be prompted by the very documents it reads, so
every path is treated as hostile: no way out of `files_root` through `..`, absolute paths,
hidden files (`.env`, `.git`), symbolic links or a link swapped in after a path was checked.
Reads open the root and walk down one folder at a time with `O_NOFOLLOW`, so what was checked
is what gets read. Walks and reads are bounded so a badly chosen root fails with a hint
instead of hanging or filling memory.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import stat
from collections.abc import Collection, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError, InputError
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES
from evigraph.ingest.roots import active_roots
from evigraph.ingest.sources import FILE_KEY_PREFIX, file_key, walk_files
from evigraph.surrogates import escaped, surrogate_at

MAX_FILES_PER_CALL = 50
MAX_WALK_ENTRIES = 100_000
PREVIEW_PAGE_CHARS = 30_000
PREVIEW_SAMPLE_CHARS = 4_000  # one sample per file, from the middle

_PDF_PREVIEW_MAX_BYTES = 50 * 1024 * 1024
_PDF_PREVIEW_PAGES = 3
_GLOB_CHARS = frozenset("*?[")
_DRIVE = re.compile(r"^[A-Za-z]:")
# Without O_NOFOLLOW and dir_fd (Windows) a checked path can still be swapped before the open.
_SECURE = hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})  # EMLINK: FreeBSD's O_NOFOLLOW
_LIST_HINT = "list the folder with a glob such as '**/*.md' to see the files it holds"


class FileSample(BaseModel):
    """One file of a preview page: enough text to judge whether the file is worth reading."""

    path: str = Field(description="posix path relative to files_root")
    bytes: int = Field(description="file size in bytes")
    chars: int = Field(description="characters in the whole file (an estimate when chars_estimated)")
    chars_estimated: bool = False
    sample: str = Field(description="text from the middle of the file")
    error: str | None = Field(default=None, description="why the file could not be sampled")


class PreviewPage(BaseModel):
    """A page of samples; `next_offset` is what to pass for the next page (None: all shown)."""

    root: str
    files: list[FileSample]
    total_files: int
    next_offset: int | None


class FilesRoot:
    """The folder an agent may read from, and the only way its tools touch files.

    `extensions` are what folders and globs pick up (default: the built-in loaders'; pass the
    knowledge base's `file_extensions` to add its custom loaders'); `max_bytes` bounds every
    read through the root (None: no bound).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        extensions: Collection[str] | None = None,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
    ) -> None:
        if extensions is None:
            from evigraph.ingest.loaders import SUPPORTED_EXTENSIONS

            extensions = SUPPORTED_EXTENSIONS
        if max_bytes is not None and max_bytes <= 0:
            raise ConfigurationError(f"invalid max_bytes {max_bytes}", "pass a positive size, or None for no bound")
        self.extensions = frozenset(e.lower() for e in extensions)
        self.max_bytes = max_bytes
        given = os.fspath(root)
        resolved = Path(os.path.realpath(given))
        if not resolved.is_dir():
            raise ConfigurationError(f"files_root {given} is not an existing folder", "pass the folder to read from")
        # A root that holds the home folder exposes keys, browser profiles and mail to the agent.
        try:
            home: Path | None = Path(os.path.realpath(Path.home()))
        except (RuntimeError, KeyError):
            home = None
        if resolved.parent == resolved or (home is not None and (resolved == home or resolved in home.parents)):
            raise ConfigurationError(
                f"files_root {resolved} is too broad: it is the filesystem root, the home folder or holds it",
                "point files_root at the folder that holds the documents",
            )
        st = os.stat(resolved)
        self.root = resolved
        self._root_id = (st.st_dev, st.st_ino)

    # --- paths ---------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        """Validate an agent's path and return it as a clean posix path relative to the root.

        Document keys are accepted because tools hand them out: `file:<root name>/<path>` for a
        root the knowledge base knows (`evigraph.ingest.roots`, active during a toolkit ingest),
        `file:` + an absolute path inside the root (keys before roots), and `file:<rel>`, unless
        a file literally named so exists (then the user's file wins, as it is what the name says).
        A plain absolute path is refused, so an agent cannot probe the disk by path.
        """
        if not isinstance(path, str) or not path.strip():
            raise InputError("an empty path was given", "name a file relative to files_root, e.g. 'notes/a.md'")
        if path.startswith(FILE_KEY_PREFIX):
            try:
                literal: str | None = self._clean(path)
            except InputError:
                literal = None
            if literal is not None and os.path.lexists(self._abs(literal)):
                return literal
            roots = active_roots()
            where = roots.path_of(path) if roots is not None else None
            path = path[len(FILE_KEY_PREFIX) :]
            if where is not None:
                path = self._under_root(where.as_posix(), key=FILE_KEY_PREFIX + path)
            elif path.startswith("/") or _DRIVE.match(path):
                path = self._under_root(path)
        return self._clean(path)

    def key(self, path: str) -> str:
        """The document key of the file `path` names (`sources.file_key`: under its root).

        Links inside the root are followed, so a link and its target are one document, as
        they are on the command line; a link leading out of the root is refused.
        """
        return file_key(Path(self._abs(self._resolve(self.relative(path)))))

    def _under_root(self, absolute: str, key: str | None = None) -> str:
        """A document key's absolute path as a path under the root (`_clean` then checks it)."""
        try:
            return Path(absolute).relative_to(self.root).as_posix()
        except ValueError:
            raise InputError(
                f"{key or FILE_KEY_PREFIX + absolute} is not a file under files_root {self.root}; refused",
                "name a file by its path relative to files_root, or by a key a tool returned",
            ) from None

    def _clean(self, path: str) -> str:
        hint = "name a file by its path relative to files_root, without '..' or hidden folders"
        if "\x00" in path:
            raise InputError(f"path {path!r} contains a NUL byte; refused", hint)
        posix = path.replace("\\", "/")
        if posix.startswith("/") or _DRIVE.match(posix):
            raise InputError(f"path {path!r} is absolute; only paths inside files_root are allowed", hint)
        parts = [p for p in posix.split("/") if p not in ("", ".")]
        if not parts:
            raise InputError(f"path {path!r} names no file", hint)
        for part in parts:
            if part == "..":
                raise InputError(f"path {path!r} leaves files_root through '..'; refused", hint)
            if part.startswith("."):
                raise InputError(f"path {path!r} goes through hidden {part!r}; hidden files are never read", hint)
        return "/".join(parts)

    def _abs(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/")) if rel else str(self.root)

    def _inside(self, real: str) -> str | None:
        """`real` relative to the root, or None when it lies outside or in a hidden folder."""
        try:
            rel = Path(real).relative_to(self.root).as_posix()
        except ValueError:
            return None
        return None if any(p.startswith(".") for p in rel.split("/")) else rel

    def _resolve(self, rel: str) -> str:
        """Follow links in `rel`; refuse when the target is not inside the root."""
        real = self._inside(os.path.realpath(self._abs(rel)))
        if real is None:
            raise InputError(
                f"{rel} is a symbolic link leading outside files_root (or to a hidden file); refused",
                "copy the document into files_root instead of linking to it",
            )
        return real

    def _check_root(self) -> None:
        with contextlib.suppress(OSError):
            st = os.stat(self.root)
            if (st.st_dev, st.st_ino) == self._root_id:
                return
        raise self._root_changed()

    def _root_changed(self) -> InputError:
        return InputError(f"files_root {self.root} is no longer the folder it was opened on", "open files_root again")

    # --- listing -------------------------------------------------------------------------

    def expand(self, patterns: Sequence[str], *, limit: int = MAX_FILES_PER_CALL) -> list[str]:
        """Turn paths, `file:` ids, folders and globs into the real files they name.

        Results are real paths so that a link and its target, or two spellings of one file,
        are read (and cited) once.
        """
        if isinstance(patterns, str):
            patterns = [patterns]
        if not patterns:
            raise InputError("no paths were given", _LIST_HINT)
        self._check_root()
        found: set[str] = set()
        for pattern in patterns:
            rel = self.relative(pattern)
            if _GLOB_CHARS.isdisjoint(rel) or os.path.lexists(self._abs(rel)):
                matched = self._expand_path(rel)
            else:
                matched = self._expand_glob(rel)
            if not matched:
                raise InputError(f"{pattern!r} matches no readable file under files_root", _LIST_HINT)
            found.update(matched)
        if len(found) > limit:
            raise InputError(
                f"{len(found)} files matched; at most {limit} can be read in one call",
                f"split the paths into calls of at most {limit} files",
            )
        return sorted(found)

    def _expand_path(self, rel: str) -> list[str]:
        absolute = self._abs(rel)
        if not os.path.lexists(absolute):
            raise InputError(f"{rel} does not exist under files_root {self.root}", _LIST_HINT)
        real = self._resolve(rel)
        real_abs = self._abs(real)
        if os.path.isdir(real_abs):
            return [r for _, r in self._walk(real)]
        if not os.path.isfile(real_abs):
            raise InputError(f"{rel} is not a regular file (a FIFO, device or socket)", "name a document file")
        return [real]

    def _expand_glob(self, rel: str) -> list[str]:
        folders = rel.split("/")[:-1]
        plain = next((i for i, part in enumerate(folders) if not _GLOB_CHARS.isdisjoint(part)), len(folders))
        base = "/".join(folders[:plain])
        base_abs = self._abs(base)
        # Starting deeper only saves time; a base reached through a link is not walked at all.
        if not os.path.isdir(base_abs) or os.path.realpath(base_abs) != base_abs:
            return []
        regex = _glob_regex(rel)
        return [real for walked, real in self._walk(base) if regex.match(walked)]

    def _walk(self, start: str) -> list[tuple[str, str]]:
        """(path as walked, real path) of every file under `start` that a folder walk picks up.

        The walk is the command line's (`walk_files`), bounded; linked files count only when
        their target is inside the root and not hidden.
        """
        found: list[tuple[str, str]] = []
        walked = walk_files(
            Path(self._abs(start)),
            self.extensions,
            max_entries=MAX_WALK_ENTRIES,
            too_many_hint="point files_root at the folder that holds the documents",
        )
        for f in walked:
            rel = f"{start}/{f.rel}" if start else f.rel
            if not f.link:
                found.append((rel, rel))
            elif (real := self._inside(os.path.realpath(f.path))) and os.path.isfile(self._abs(real)):
                found.append((rel, real))
        return found

    # --- reading -------------------------------------------------------------------------

    def read_bytes(self, rel: str, *, max_bytes: int | None) -> bytes:
        """The file's bytes, refusing anything but a regular file inside the root."""
        rel = self.relative(rel)
        fd, st = self._open_file(rel)
        try:
            if max_bytes is not None and st.st_size > max_bytes:
                raise _too_large(rel, st.st_size, max_bytes)
            data = _read_upto(fd, None if max_bytes is None else max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:  # grew after the fstat
                raise _too_large(rel, len(data), max_bytes)
            return data
        finally:
            os.close(fd)

    def _open_file(self, rel: str) -> tuple[int, os.stat_result]:
        """An fd on the regular file `rel` (the caller closes it) and its fstat."""
        if _SECURE:
            try:
                fd = self._open_nofollow(rel)
            except OSError as exc:
                if exc.errno not in _LINK_ERRNOS:
                    raise _os_error(rel, exc) from exc
                real = self._resolve(rel)
                if real == rel:
                    raise InputError(f"{rel} goes through something that is not a folder", _LIST_HINT) from exc
                try:  # the link's target, again folder by folder: a link swapped in now fails closed
                    fd = self._open_nofollow(real)
                except OSError as again:
                    if again.errno not in _LINK_ERRNOS:
                        raise _os_error(rel, again) from again
                    raise InputError(
                        f"{rel} is a symbolic link that changed while it was opened; refused", "retry the read"
                    ) from again
        else:
            real = self._resolve(rel)
            self._check_root()
            try:
                fd = os.open(self._abs(real), os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except OSError as exc:
                raise _os_error(rel, exc) from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{rel} is not a regular file (a folder, FIFO or device); refused", "name a file")
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def _open_nofollow(self, rel: str) -> int:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._root_id:
                raise self._root_changed()
            *folders, name = rel.split("/")
            for folder in folders:
                fd, parent = os.open(folder, _DIR_FLAGS, dir_fd=fd), fd
                os.close(parent)
            return os.open(name, _FILE_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)

    # --- preview -------------------------------------------------------------------------

    def preview(
        self, offset: int = 0, *, page_chars: int = PREVIEW_PAGE_CHARS, sample_chars: int = PREVIEW_SAMPLE_CHARS
    ) -> PreviewPage:
        """A page of middle-of-file samples, so an agent can choose what to read in full.

        The middle is sampled because starts are title pages, tables of contents and licence
        boilerplate that say little about what a document is about.
        """
        if offset < 0 or page_chars < 1 or sample_chars < 1:
            raise InputError(
                f"bad preview request (offset {offset}, page_chars {page_chars}, sample_chars {sample_chars})",
                "pass offset >= 0 (the previous page's next_offset) and positive sizes",
            )
        self._check_root()
        files = sorted({real for _, real in self._walk("")})
        samples: list[FileSample] = []
        used = 0
        next_offset: int | None = None
        for index in range(offset, len(files)):
            sample = self._sample(files[index], sample_chars)
            if samples and used + len(sample.sample) > page_chars:
                next_offset = index
                break
            samples.append(sample)
            used += len(sample.sample)
        return PreviewPage(root=str(self.root), files=samples, total_files=len(files), next_offset=next_offset)

    def _sample(self, rel: str, sample_chars: int) -> FileSample:
        if surrogate_at(rel) is not None:  # a name that is not UTF-8 cannot be sent as JSON
            error = "the file name is not valid UTF-8; rename it to a UTF-8 name to read it"
            return FileSample(path=escaped(rel), bytes=0, chars=0, sample="", error=error)
        try:
            if _suffix(rel) == ".pdf":
                return self._sample_pdf(rel, sample_chars)
            return self._sample_text(rel, sample_chars)
        except Exception as exc:  # one unreadable file must not hide the rest of the page
            size = 0
            with contextlib.suppress(OSError):
                size = os.lstat(self._abs(rel)).st_size
            return FileSample(path=rel, bytes=size, chars=0, sample="", error=str(exc))

    def _sample_text(self, rel: str, sample_chars: int) -> FileSample:
        window = sample_chars * 4  # UTF-8 needs at most 4 bytes a character
        fd, st = self._open_file(rel)
        try:
            size = st.st_size
            start = max(0, (size - window) // 2)
            data = _read_upto(fd, window + 1 if start == 0 else window, start)
        finally:
            os.close(fd)
        data, whole = data[:window], start == 0 and len(data) <= window
        text = data.decode("utf-8", errors="replace")
        chars = len(text) if whole else round(size * len(text) / max(1, len(data)))
        sample = _middle(text, sample_chars, whole=whole)
        return FileSample(path=rel, bytes=size, chars=chars, chars_estimated=not whole, sample=sample)

    def _sample_pdf(self, rel: str, sample_chars: int) -> FileSample:
        from pypdf import PdfReader

        data = self.read_bytes(rel, max_bytes=_PDF_PREVIEW_MAX_BYTES)
        reader = PdfReader(io.BytesIO(data))
        count = len(reader.pages)
        first = max(0, count // 2 - _PDF_PREVIEW_PAGES // 2)
        texts = [reader.pages[i].extract_text() or "" for i in range(first, min(count, first + _PDF_PREVIEW_PAGES))]
        chars = round(count * sum(map(len, texts)) / len(texts)) if texts else 0
        sample = _middle("\n\n".join(t.strip() for t in texts), sample_chars, whole=True)
        return FileSample(path=rel, bytes=len(data), chars=chars, chars_estimated=True, sample=sample)


# --- helpers -------------------------------------------------------------------------------


def _suffix(rel: str) -> str:
    return os.path.splitext(rel)[1].lower()


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """fnmatch-style matching where `*` stays in one folder and `**` spans any depth."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            chars = "".join(c if c == "-" else re.escape(c) for c in body[negate:])
            out.append(f"[^/{chars}]" if negate else f"[{chars}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _middle(text: str, limit: int, *, whole: bool) -> str:
    """About `limit` characters from the middle of `text`, cut to whole lines when it can be."""
    if whole and len(text) <= limit:
        return text
    start = max(0, (len(text) - limit) // 2)
    piece = text[start : start + limit]
    if not whole or (start > 0 and text[start - 1] != "\n"):
        cut = piece.find("\n")
        if 0 <= cut < len(piece) // 2:
            piece = piece[cut + 1 :]
    if not whole or start + limit < len(text):
        cut = piece.rfind("\n")
        if cut >= len(piece) // 2:
            piece = piece[: cut + 1]
    return piece if whole else piece.strip("\ufffd")


def _read_upto(fd: int, limit: int | None, offset: int = 0) -> bytes:
    """Up to `limit` bytes from `offset`, looping because reads may return short."""
    if offset and not hasattr(os, "pread"):
        os.lseek(fd, offset, os.SEEK_SET)
    chunks: list[bytes] = []
    total = 0
    while limit is None or total < limit:
        size = 1 << 20 if limit is None else min(1 << 20, limit - total)
        chunk = os.pread(fd, size, offset + total) if offset and hasattr(os, "pread") else os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _too_large(rel: str, size: int, max_bytes: int) -> InputError:
    return InputError(f"{rel} is {size} bytes, over max_bytes {max_bytes}", "split the file or raise max_file_bytes")


def _os_error(rel: str, exc: OSError) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{rel} does not exist under files_root", _LIST_HINT)
    if isinstance(exc, PermissionError):
        return InputError(f"{rel} is not readable: permission denied", "give the user read access to the file")
    return InputError(f"{rel} cannot be opened: {exc.strerror or exc}", _LIST_HINT)
