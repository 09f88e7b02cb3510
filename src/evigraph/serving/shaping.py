"""Shaping tool results for the wire: a size limit that keeps JSON valid, and safe error text.

A client's context window is the scarce resource, so a result over the limit is shortened
before it is sent: the longest lists first (at any depth), then the longest strings, until it
fits. The result stays valid JSON and says what was cut, and every evidence number that was cut
or shortened is reported so the session can forget it: an agent must not cite what it never saw.
"""

from __future__ import annotations

import json
from typing import Any

_MIN_STRING = 200

Path = tuple[str | int, ...]


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _walk(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every node under `value` with its path (iterative: results are walked on every tool call)."""
    out: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any]] = [(path, value)]
    while stack:
        here, node = stack.pop()
        out.append((here, node))
        if isinstance(node, dict):
            stack.extend(((*here, k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*here, i), v) for i, v in enumerate(node))
    return out


def _get(root: Any, path: Path) -> Any:
    for key in path:
        root = root[key]
    return root


def evidence_numbers(value: Any) -> set[int]:
    """Every evidence number `n` (positive int under the key "n") anywhere in `value`."""
    found: set[int] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            n = node.get("n")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                found.add(n)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _owner_numbers(root: Any, path: Path) -> set[int]:
    """Numbers of the evidence items enclosing `path` (a shortened string spoils its item)."""
    found = set()
    for depth in range(len(path), -1, -1):
        node = _get(root, path[:depth])
        if isinstance(node, dict) and isinstance(node.get("n"), int) and node["n"] > 0:
            found.add(node["n"])
    return found


def _label(path: Path) -> str:
    return ".".join(str(p) if isinstance(p, str) else "[]" for p in path) or "result"


def _keep(root_size: int, items: list[Any], budget: int) -> int:
    """How many of `items` (a list inside a root of `root_size` characters) to keep: half, or more if more fit.

    Halving alone could cut a list to half the budget when a few items fewer would have fit. JSON
    sizes add up (each item, plus ", " between items), so one pass over the items finds the count.
    """
    half = len(items) // 2
    over = root_size - budget
    keep, saved = len(items), 0
    while keep > half and saved < over:
        keep -= 1
        saved += _size(items[keep]) + 2
    return keep


def truncate(data: dict[str, Any], limit: int) -> tuple[dict[str, Any], list[str], set[int]]:
    """`data` shortened to at most `limit` characters of JSON (the operator's max_response_chars).

    Returns the shortened copy, a description of each list that was cut, and the evidence
    numbers that were cut or shortened.
    """
    if _size(data) <= limit:
        return data, [], set()
    work: dict[str, Any] = json.loads(json.dumps(data, ensure_ascii=False, default=str))
    before = evidence_numbers(work)
    spoiled: set[int] = set()
    cut: dict[str, list[int]] = {}  # list label -> [original length, kept]
    hint0 = work.get("hint")
    reserve = 400  # room for the "truncated" flag and the hint added below
    while True:
        more, size = _shrink(work, limit - reserve, cut)
        spoiled |= more
        notes = [f"{label} ({n} → {kept})" for label, (n, kept) in cut.items()]
        hint = f"result shortened to fit {limit:,} characters; lists cut: {', '.join(notes) or 'none'}"
        if spoiled:
            hint += "; long texts were shortened (read them with read_passages)"
        hint += "; ask for fewer items (top_k, limit) to see everything"
        shaped = {**work, "truncated": True, "hint": f"{hint0}; {hint}" if hint0 else hint}
        shaped_size = _size(shaped)
        extra = shaped_size - size
        if shaped_size <= limit or extra < reserve or not _shrinkable(work):
            break
        reserve = extra + 100
    dropped = (before - evidence_numbers(shaped)) | spoiled
    return shaped, notes, dropped


def _shrinkable(work: Any) -> bool:
    return any(
        (isinstance(v, list) and len(v) > 1) or (isinstance(v, str) and len(v) > _MIN_STRING) for _, v in _walk(work)
    )


def _shrink(work: dict[str, Any], budget: int, cut: dict[str, list[int]]) -> tuple[set[int], int]:
    """Cut `work` in place to `budget` characters.

    Returns the numbers of the items whose text was shortened, and the size reached.
    """
    spoiled: set[int] = set()
    while (size := _size(work)) > budget:
        lists = [(p, v) for p, v in _walk(work) if isinstance(v, list) and len(v) > 1]
        if lists:
            most = max(len(v) for _, v in lists)
            ties = [(p, v) for p, v in lists if len(v) == most]  # sizes only to break ties: they cost
            path, longest = max(ties, key=lambda pv: _size(pv[1])) if len(ties) > 1 else ties[0]
            entry = cut.setdefault(_label(path), [len(longest), len(longest)])
            keep = _keep(size, longest, budget)
            del longest[keep:]
            entry[1] = keep
            continue
        strings = [(p, v) for p, v in _walk(work) if isinstance(v, str) and len(v) > _MIN_STRING]
        if not strings:
            break
        path, text = max(strings, key=lambda pv: len(pv[1]))
        parent = _get(work, path[:-1])
        parent[path[-1]] = text[: len(text) // 2].rstrip() + " …(shortened)"
        spoiled |= _owner_numbers(work, path)
    return spoiled, size


def failure_kind(exc: BaseException) -> tuple[str, str]:
    """(kind, next step) for a failure that is not a ToolError, without its internals.

    Our own failures are told apart by type; only foreign exceptions (a model provider's client)
    are recognised by name.
    """
    from evigraph.errors import ConfigurationError, QueryTimeout, StoreError

    name = type(exc).__name__.lower()
    if isinstance(exc, TimeoutError | QueryTimeout) or "timeout" in name:
        return "timeout", "retry with a narrower request (smaller limit, top_k or depth)"
    if isinstance(exc, StoreError):
        return "database", "check the server log; the knowledge base may be locked, missing or damaged"
    if "openai" in name or "provider" in str(exc).lower() or "api" in name or "http" in name:
        return "model provider", "check the model endpoint, its API key and network access, then retry"
    if isinstance(exc, ConfigurationError | ValueError | KeyError | TypeError):
        return "configuration", "check the server's options and environment (see the server log)"
    return "internal", "see the server log (stderr) for details"
