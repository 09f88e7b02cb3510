"""Checking query parameters before the engine binding sees them.

The binding types a list from its first item and then fails on the rest with a bare ValueError
(`[1, "a"]`: invalid literal for int()), fails at runtime on an empty list, on integers beyond
64 bits and on strings with lone surrogates, and silently rewrites a list of maps with different
keys. Each of those is refused here with a message that says which parameter and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evigraph.store.cypher.lexer import refuse

MAX_VALUES = 100_000
MAX_DEPTH = 8
_INT64 = 2**63
_HINT = "parameters are JSON: strings, numbers, booleans, null, lists of one kind of value, and objects"


def check_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """`params` as the engine can bind them, or CypherRefused naming the first bad value."""
    out: dict[str, Any] = {}
    budget = [MAX_VALUES]
    for name, value in (params or {}).items():
        if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
            raise refuse(f"parameter name {name!r} is not a plain name", _HINT)
        _shape(value, f"${name}", 0, budget)
        out[name] = value
    return out


def _shape(value: Any, where: str, depth: int, budget: list[int]) -> object:
    """A comparable description of the value's type, so list items can be checked for one kind."""
    budget[0] -= 1
    if budget[0] < 0:
        raise refuse(f"the parameters hold more than {MAX_VALUES} values", _HINT)
    if depth > MAX_DEPTH:
        raise refuse(f"{where} is nested more than {MAX_DEPTH} levels deep", _HINT)
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise refuse(f"{where} is an integer beyond 64 bits", _HINT)
        return "number"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise refuse(f"{where} is not a finite number", _HINT)
        return "number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise refuse(f"{where} holds a lone surrogate, which is not text", _HINT) from None
        return "string"
    if isinstance(value, list):
        return _list_shape(value, where, depth, budget)
    if isinstance(value, dict):
        if not value:
            raise refuse(f"{where} is an empty object", _HINT)
        shapes = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise refuse(f"{where} has a key that is not a non-empty string", _HINT)
            shapes[key] = _shape(item, f"{where}.{key}", depth + 1, budget)
        return ("map", tuple(sorted(shapes.items(), key=lambda kv: kv[0])))
    raise refuse(f"{where} is a {type(value).__name__}, which is not a JSON value", _HINT)


def _list_shape(value: list[Any], where: str, depth: int, budget: list[int]) -> object:
    if not value:
        raise refuse(f"{where} is an empty list, which the engine cannot type", "leave that filter out of the query")
    kinds = {_shape(item, f"{where}[{i}]", depth + 1, budget) for i, item in enumerate(value)}
    kinds.discard(None)
    if not kinds:
        raise refuse(f"{where} holds only nulls, which the engine cannot type", "leave that filter out of the query")
    if len(kinds) > 1:
        raise refuse(f"{where} mixes kinds of values; a list holds one kind (all strings, all numbers, ...)", _HINT)
    return ("list", kinds.pop())
