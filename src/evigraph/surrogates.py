"""Text that UTF-8 cannot encode: lone surrogates, and how to find and show them.

Python strings may hold code points U+D800-U+DFFF alone. They arrive two ways: a JSON escape
such as "\\ud800" without its pair (valid JSON, reachable over MCP or in a JSONL record), and a
file name that is not UTF-8, which the OS layer decodes with `surrogateescape` (byte 0xff
becomes U+DCFF). The engine cannot take such a string as a parameter and no JSON answer can
hold one, so every layer that receives outside text checks with these helpers first.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_at(text: str) -> int | None:
    """Offset of the first lone surrogate in `text`, or None."""
    found = _SURROGATE.search(text)
    return found.start() if found else None


def surrogate_path(value: Any) -> str | None:
    """Where in `value` (nested dicts, lists and tuples) a string holds a lone surrogate, or None.

    The answer is a dotted path such as `entities.0.aliases.1`, itself free of surrogates. The
    walk uses a stack, not recursion, so deeply nested junk cannot overflow it.
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where or "the value"
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{where}.<a key>" if where else "<a key>"
                stack.append((f"{where}.{key}" if where else str(key), sub))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}.{i}" if where else str(i), sub) for i, sub in enumerate(item))
    return None


def escaped(text: str) -> str:
    """`text` with its lone surrogates shown as escapes: a file name's raw byte 0xff as `\\xff`.

    Showing the byte (not U+DCFF) is what lets the user find and rename the file; other lone
    surrogates are shown as `\\ud800`.
    """
    if surrogate_at(text) is None:
        return text
    return _SURROGATE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"
