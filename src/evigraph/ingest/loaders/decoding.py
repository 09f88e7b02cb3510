"""Turning a text file's bytes into text, whatever encoding it was saved in, or saying why not.

Most files are UTF-8, but a folder of real documents also holds files saved by Windows editors
(UTF-8 with a byte order mark, UTF-16 with one), and older ones in Latin-1 or its Windows
superset cp1252. Those are decoded without being asked. A guess that could be wrong is never
made silently: Latin-1 decodes every byte, so a Cyrillic or Shift-JIS file would come out as
plausible-looking garbage that then becomes entities and citations. So the legacy guess is taken
only when the result looks like Western text, and anything else fails with an `InputError` that
names the fix: `--encoding` (`encoding=` in Python), or converting the file.

The order, first match wins:

1. a byte order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE): the file says what it is;
2. valid UTF-8 (checked only without NUL bytes, which no UTF-8 text holds);
3. the encoding the caller assumed (`assumed_encoding`, from `--encoding`), decoded strictly;
4. the charset the file declares (an HTML `<meta charset>`), when it decodes;
5. cp1252 (a superset of Latin-1's printable characters), when the text looks Western;
6. otherwise an error: UTF-16 without a mark is named as such, NUL bytes mean binary.

The assumed encoding comes third, not first, so that `--encoding cp1251` on a folder that also
holds UTF-8 files decodes only the files that need it.
"""

from __future__ import annotations

import codecs
import re
import string
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from evigraph.errors import ConfigurationError, InputError

BINARY_SNIFF_BYTES = 8192
"""How much of a file is checked for NUL bytes; text never contains them, binaries almost always
do within the first few KiB."""

_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

LEGACY_ENCODING = "cp1252"
"""The guess for text that is not UTF-8: Windows' Western encoding, which reads Latin-1 files
alike (it differs only in 0x80-0x9F, control codes no Latin-1 text uses)."""

_MOSTLY_FOREIGN = 0.3
"""Above this share of non-ASCII among letters a cp1252 reading is not trusted: Western languages
stay far below it (French about 4%), while Cyrillic, Greek or CJK bytes read as cp1252 are
nearly all non-ASCII."""

_FEW = 3
"""Up to this many non-ASCII characters the share is not judged: a two-word note is too short."""

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_ASCII_LETTERS = string.ascii_letters.encode()

_ASSUMED: ContextVar[str | None] = ContextVar("evigraph_assumed_encoding", default=None)


def encoding_hint(example: str = "cp1251") -> str:
    """The fix for a file whose encoding is not known, with an example encoding name."""
    return (
        f"ingest it with its encoding named, e.g. --encoding {example} (encoding= in Python; it applies to "
        f"every file of that ingest that is not UTF-8), or convert it: iconv -f {example.upper()} -t UTF-8 FILE"
    )


def check_encoding(encoding: str) -> str:
    """The codec's canonical name; refuses names Python does not know and non-text codecs (base64)."""
    try:
        b"x".decode(encoding, errors="ignore")  # LookupError for bytes-to-bytes codecs too
        return codecs.lookup(encoding).name
    except LookupError as exc:
        raise ConfigurationError(
            f"unknown text encoding {encoding!r}",
            "use a Python codec name such as utf-8, cp1252, latin-1, utf-16, cp1251, shift_jis or gb18030",
        ) from exc


@contextmanager
def assumed_encoding(encoding: str | None) -> Iterator[None]:
    """Decode files that are neither UTF-8 nor marked by a byte order mark as `encoding`, within.

    The loaders that decode are chosen per knowledge base while the encoding is chosen per
    ingest call, so it travels in a context variable rather than through every loader's
    signature. It is scoped to the calling task: an ingest running beside it in the same process
    (another MCP session) does not see it, and `asyncio.to_thread` carries it to the reading thread.
    """
    token = _ASSUMED.set(check_encoding(encoding) if encoding else None)
    try:
        yield
    finally:
        _ASSUMED.reset(token)


def check_not_binary(data: bytes, path: Path) -> None:
    """Refuse binary content, which would decode to noise or fail with a misleading error."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise _binary(path)


def decode_text(data: bytes, path: Path, *, declared: str | None = None) -> str:
    """The text of `data` by the rules in the module docstring; `declared` is the file's own claim."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _no_nul(_strict(data[len(bom) :], codec, path, after_bom=True), path)
    head = data[:BINARY_SNIFF_BYTES]
    if b"\x00" not in head:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    assumed = _ASSUMED.get()
    if assumed is not None:
        return _no_nul(_strict(data, assumed, path), path)
    if b"\x00" in head:
        if (order := _utf16_order(head)) is not None:
            raise InputError(
                f"{path}: looks like UTF-16 ({order}) text without a byte order mark",
                f"pass --encoding utf-16-{order.lower()} (encoding='utf-16-{order.lower()}' in Python)",
            )
        raise _binary(path)
    if declared is not None and (text := _declared(data, declared)) is not None:
        return text
    try:
        text = data.decode(LEGACY_ENCODING)
    except UnicodeDecodeError:
        text = None
    if text is not None and _looks_western(text):
        return text
    offset = _first_bad_utf8(data)
    raise InputError(
        f"{path}: not UTF-8 (byte 0x{data[offset]:02x} at offset {offset}) and not confidently Latin-1/cp1252",
        encoding_hint(),
    )


def _strict(data: bytes, codec: str, path: Path, *, after_bom: bool = False) -> str:
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        where = f"byte 0x{data[exc.start]:02x} at offset {exc.start}" if exc.start < len(data) else "a cut character"
        if after_bom:
            raise InputError(
                f"{path}: starts with a {codec} byte order mark but is not valid {codec} ({where})",
                "re-save the file in one encoding (UTF-8 is best)",
            ) from exc
        raise InputError(
            f"{path}: not valid {codec} ({where}), the encoding assumed with --encoding",
            "check the file's encoding; --encoding applies to every file of the ingest that is not UTF-8",
        ) from exc


def _no_nul(text: str, path: Path) -> str:
    if "\x00" in text[:BINARY_SNIFF_BYTES]:
        raise _binary(path)
    return text


def _binary(path: Path) -> InputError:
    return InputError(
        f"{path}: binary file (NUL bytes found), not text",
        "convert it to text first, or leave it out of the ingest",
    )


def _declared(data: bytes, label: str) -> str | None:
    """`data` decoded as the charset the file declares, or None when that is unusable or wrong."""
    try:
        codec = codecs.lookup(label).name
    except LookupError:
        return None
    if codec in ("latin-1", "iso8859-1", "ascii"):
        codec = LEGACY_ENCODING  # as browsers do: pages labelled Latin-1 are written in cp1252
    if codec.startswith(("utf-16", "utf-32")):
        return None  # a page cannot declare these in ASCII-readable bytes; the mark decided already
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text[:BINARY_SNIFF_BYTES] else text


def _utf16_order(head: bytes) -> str | None:
    """ "LE" or "BE" when the NUL bytes fall where UTF-16 puts the high byte of ASCII characters."""
    pairs = len(head) // 2
    if pairs < 4:
        return None
    even = sum(1 for i in range(0, 2 * pairs, 2) if head[i] == 0)
    odd = sum(1 for i in range(1, 2 * pairs, 2) if head[i] == 0)
    if odd >= 0.6 * pairs and even <= 0.05 * pairs:
        return "LE"
    if even >= 0.6 * pairs and odd <= 0.05 * pairs:
        return "BE"
    return None


def _looks_western(text: str) -> bool:
    """Whether a cp1252 reading is believable: no control codes, and mostly ASCII letters."""
    if _CONTROL.search(text):
        return False
    ascii_part = text.encode("ascii", "ignore")
    foreign = len(text) - len(ascii_part)
    letters = len(ascii_part) - len(ascii_part.translate(None, _ASCII_LETTERS))
    return foreign <= _FEW or foreign <= _MOSTLY_FOREIGN * (foreign + letters)


def _first_bad_utf8(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return min(exc.start, len(data) - 1)
    return 0
