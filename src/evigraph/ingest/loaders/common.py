"""Reading files safely, shared by every loader.

A folder walk meets whatever is on disk: huge logs, images with a `.txt` name, files in an
encoding nobody recorded (see `decoding`), empty placeholders, files the user may not read. Each
of those must become an `InputError` that names the file and the fix, so one bad file fails alone
instead of crashing the run or, worse, putting mojibake or megabytes of noise into the knowledge base.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path

from evigraph.errors import InputError
from evigraph.ingest.loaders.base import LoaderStrategy
from evigraph.ingest.loaders.decoding import BINARY_SNIFF_BYTES, check_not_binary, decode_text
from evigraph.models import LoadedDocument

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
"""Largest file read by default: big enough for books, small enough to stop a stray dump."""

_UTF8_BOM = b"\xef\xbb\xbf"


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def read_bytes(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a whole file, refusing one over `max_bytes` before reading it into memory.

    The size is checked from `stat` first so a 10 GiB file costs nothing; the read is bounded too
    because the file may grow (or be a pipe) between the two calls.
    """
    if max_bytes <= 0:
        raise InputError(f"invalid size limit {max_bytes} bytes", "pass a positive max_file_bytes=")
    try:
        if not path.exists():
            raise InputError(f"{path}: file not found", "check the path and that the file still exists")
        if path.is_dir():
            raise InputError(f"{path}: is a directory, not a file", "pass a file, or ingest the folder")
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_large(path, size, max_bytes)
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except PermissionError as exc:
        raise InputError(f"{path}: permission denied", "make the file readable by this user (chmod u+r)") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})", "check the file") from exc
    if len(data) > max_bytes:
        raise _too_large(path, len(data), max_bytes)
    return data


def iter_lines(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[bytes]:
    """The file's lines as bytes, without their `\\n`, read one at a time.

    For record formats, where holding the whole file (and every document made from it) would
    let memory grow with the file: only the current line is in memory. The size, binary and
    readability checks of `read_bytes` apply; a UTF-8 byte order mark is dropped. Decoding is
    left to the caller, so one badly encoded line fails alone.
    """
    if max_bytes <= 0:
        raise InputError(f"invalid size limit {max_bytes} bytes", "pass a positive max_file_bytes=")
    try:
        if path.is_dir():
            raise InputError(f"{path}: is a directory, not a file", "pass a file, or ingest the folder")
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_large(path, size, max_bytes)
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: file not found", "check the path and that the file still exists") from exc
    except PermissionError as exc:
        raise InputError(f"{path}: permission denied", "make the file readable by this user (chmod u+r)") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})", "check the file") from exc
    with fh:
        check_not_binary(fh.peek(BINARY_SNIFF_BYTES)[:BINARY_SNIFF_BYTES], path)
        total = 0
        first = True
        while True:
            try:
                line = fh.readline(max_bytes - total + 1)
            except OSError as exc:
                raise InputError(f"{path}: cannot be read ({exc.strerror or exc})", "check the file") from exc
            if not line:
                return
            total += len(line)
            if total > max_bytes:  # the file grew after the stat
                raise _too_large(path, total, max_bytes)
            if first and line.startswith(_UTF8_BOM):
                line = line[len(_UTF8_BOM) :]
            first = False
            yield line[:-1] if line.endswith(b"\n") else line


def _too_large(path: Path, size: int, max_bytes: int) -> InputError:
    return InputError(
        f"{path}: file is {_mib(size)}, over the {_mib(max_bytes)} limit",
        "raise the limit with the max_file_bytes= option or --max-file-mb",
    )


def normalize_newlines(text: str) -> str:
    """Use `\\n` only, so offsets and content hashes do not depend on the editor's platform."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def require_content(text: str, path: Path) -> None:
    """Refuse empty input: it would become a document with no chunks that no search can find."""
    if not text.strip():
        raise InputError(f"{path}: empty file (no text)", "add content or leave the file out of the ingest")


def read_text(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Read a text file with every check a loader needs: size, binary, encoding, non-empty."""
    return text_of(read_bytes(path, max_bytes), path)


def text_of(data: bytes, path: Path, *, declared: str | None = None) -> str:
    """A file's bytes as text, with the binary, encoding and non-empty checks.

    `declared` is the charset the file names itself (an HTML `<meta charset>`), trusted only
    when the bytes are not UTF-8 and decode with it.
    """
    text = normalize_newlines(decode_text(data, path, declared=declared))
    require_content(text, path)
    return text


class FileLoader(LoaderStrategy):
    """A format parsed from one whole file: `load` reads it once, capped at `max_bytes`, and
    parses it with `load_bytes`, the same parser the toolkit calls with bytes it read itself
    (through a handle that does not follow symlinks), so the two ways in cannot drift apart."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes

    def load(self, path: Path, key: str) -> list[LoadedDocument]:
        path = Path(path)
        return self.load_bytes(read_bytes(path, self.max_bytes), path, key)

    @abstractmethod
    def load_bytes(self, data: bytes, path: Path, key: str) -> list[LoadedDocument]: ...
