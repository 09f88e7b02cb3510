"""Deciding whether agent-written Cypher may run, and the text the engine is given instead.

A query reaches the engine only if its tokens (cypher_lexer) form one statement that starts with
a reading clause, uses no write, file, extension or transaction keyword, calls only allow-listed
functions and procedures, and never names an internal property. The engine then gets a rewrite,
not the original: comments are removed (so no disagreement about where one ends can hide code),
and every UNION branch's final RETURN gets a LIMIT, so the engine stops producing rows at the
row cap instead of materialising all of them before the first is fetched. The engine's own plan
is checked afterwards as a second, independent layer (cypher_plan).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evigraph.store.embedded.cypher_lexer import Kind, Token, refuse, tokenize
from evigraph.store.embedded.cypher_rules import (
    CAST_TARGETS,
    FORBIDDEN_KEYWORDS,
    FUNCTION_HINT,
    FUNCTIONS,
    HIDDEN_PROPERTIES,
    HIDDEN_TABLES,
    HINT,
    KEY_FUNCTIONS,
    NOT_FUNCTIONS,
    PROCEDURES,
    RANGE_MAX_ITEMS,
    STARTS,
    TRACE_HINT,
)


@dataclass(frozen=True)
class Guarded:
    text: str  # what the engine runs
    params: dict[str, Any]  # only the parameters the query names (the engine refuses extra ones)


def guard(query: str, params: Mapping[str, Any] | None, row_cap: int) -> Guarded:
    """The rewritten query and its parameters, or CypherRefused saying what may not run."""
    lexed = tokenize(query)
    tokens = _one_statement(lexed.tokens)
    _check_keywords(tokens)
    _check_hidden(tokens, params or {})
    _check_calls(tokens)
    _check_functions(tokens)
    text = _rewrite(query, lexed.comments, tokens, params or {}, row_cap)
    # from the rewrite: a `LIMIT $n` it clamped to a literal no longer names $n
    return Guarded(text, _used_params(tokenize(text).tokens, params or {}))


def _one_statement(tokens: list[Token]) -> list[Token]:
    semis = [i for i, t in enumerate(tokens) if t.kind is Kind.PUNCT and t.value == ";"]
    if semis and semis != [len(tokens) - 1]:
        raise refuse("free-form Cypher runs one statement; this query has several", HINT)
    body = tokens[:-1] if semis else tokens
    if not body:
        raise refuse("the query is empty", HINT)
    return body


def _check_keywords(tokens: list[Token]) -> None:
    found: list[str] = []
    for i, t in enumerate(tokens):
        if not t.is_name or _after_dot(tokens, i):
            continue
        word = t.value.upper()
        if word in FORBIDDEN_KEYWORDS and word not in found:
            found.append(word)
    if found:
        raise refuse(
            f"Cypher {', '.join(found)} is refused: it {FORBIDDEN_KEYWORDS[found[0]]}, and free-form queries "
            "are read-only",
            HINT,
        )
    first = tokens[0]
    if not first.is_word(*STARTS):
        raise refuse(f"a query must start with MATCH, OPTIONAL MATCH, UNWIND, WITH, RETURN or CALL, not {first.text}")
    for i, t in enumerate(tokens):
        if t.kind is Kind.PUNCT and t.value == "." and _next_is(tokens, i, "*"):
            raise refuse("n.* is refused: it returns internal properties", "return the node itself, or name properties")


def _check_hidden(tokens: list[Token], params: Mapping[str, Any]) -> None:
    # NFKC and casefold, so a fullwidth or compatibility spelling inside quotes is caught too
    names = {_folded(t.value) for t in tokens if t.is_name or t.kind is Kind.STRING}
    names |= {_folded(v) for v in _strings(params.values())}
    if names & HIDDEN_TABLES:
        raise refuse("free-form Cypher does not read task records (tasks, events, steps, decisions)", TRACE_HINT)
    hidden = sorted(names & HIDDEN_PROPERTIES)
    if hidden:
        raise refuse(
            f"queries do not return {' or '.join(hidden)}: vectors, index text and passage contexts are internal",
            "return text, name, description or other properties (get_ontology lists them); "
            "for similarity use search_passages",
        )


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def _check_calls(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not t.is_word("CALL") or _after_dot(tokens, i):
            continue
        name = tokens[i + 1] if i + 1 < len(tokens) else None
        if name is None or not name.is_name or name.value.lower() not in PROCEDURES or not _next_is(tokens, i + 1, "("):
            shown = name.text if name is not None else "(nothing)"
            raise refuse(
                f"CALL {shown} is refused: only catalogue and search procedures run here",
                f"allowed procedures: {', '.join(sorted(PROCEDURES))}",
            )


def _check_functions(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not t.is_name or not _next_is(tokens, i, "("):
            continue
        if _after_dot(tokens, i):
            raise refuse(f"calling .{t.text}() is refused", FUNCTION_HINT)
        if i > 0 and tokens[i - 1].is_word("CALL"):
            continue  # a procedure, checked by _check_calls
        word = t.value.upper()
        if t.kind is Kind.WORD and word in NOT_FUNCTIONS:
            if word == "CAST":
                _check_cast(tokens, i)
            continue
        name = t.value.lower()
        if name not in FUNCTIONS:
            raise refuse(f"function {t.text} is not allowed in free-form queries", FUNCTION_HINT)
        if name == "range":
            _check_range(tokens, i)
        if name in KEY_FUNCTIONS:
            _check_key_argument(tokens, i)


def _check_cast(tokens: list[Token], i: int) -> None:
    close = _closing(tokens, i + 1)
    inner = tokens[i + 2 : close]
    depth, split = 0, -1
    for j, t in enumerate(inner):  # the target follows the last top-level AS or comma
        if t.kind is Kind.PUNCT and t.value in "([{":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            depth -= 1
        elif depth == 0 and (t.is_word("AS") or (t.kind is Kind.PUNCT and t.value == ",")):
            split = j
    target = inner[split + 1 :] if split >= 0 else []
    words = [t.value.upper() for t in target if t.kind in (Kind.WORD, Kind.STRING)]
    shape_ok = all(t.kind in (Kind.WORD, Kind.STRING, Kind.NUMBER) or t.value in "()[]," for t in target)
    if not words or not shape_ok or words[0].split("(")[0].split("[")[0] not in CAST_TARGETS:
        raise refuse(
            "CAST may only produce numbers, booleans, dates and timestamps here",
            "casting a node or list to STRING would print internal properties; return the properties instead",
        )


def _check_range(tokens: list[Token], i: int) -> None:
    close = _closing(tokens, i + 1)
    args: list[int] = []
    sign = 1
    for t in tokens[i + 2 : close]:
        if t.kind is Kind.PUNCT and t.value == "-":
            sign = -sign
        elif t.kind is Kind.NUMBER and t.value.isdigit():
            args.append(sign * int(t.value))
            sign = 1
        elif not (t.kind is Kind.PUNCT and t.value == ","):
            args = []
            break
    if len(args) in (2, 3):
        step = args[2] if len(args) == 3 else 1
        items = 0 if step == 0 else max(0, math.floor((args[1] - args[0]) / step) + 1)
        if step != 0 and items <= RANGE_MAX_ITEMS:
            return
    raise refuse(
        f"range() takes integer literals spanning at most {RANGE_MAX_ITEMS} items here",
        "the engine builds a range without checking its time limit; filter graph data instead",
    )


def _check_key_argument(tokens: list[Token], i: int) -> None:
    close = _closing(tokens, i + 1)
    if not (
        close - 2 > i + 1
        and tokens[close - 1].kind is Kind.STRING
        and tokens[close - 2].kind is Kind.PUNCT
        and tokens[close - 2].value == ","
    ):
        raise refuse(
            f"{tokens[i].text}() takes its property name as one string literal here",
            "write the name as a literal, e.g. struct_extract(n, 'name')",
        )


def _closing(tokens: list[Token], open_at: int) -> int:
    """Index of the bracket that closes the one at `open_at`."""
    depth = 0
    for j in range(open_at, len(tokens)):
        t = tokens[j]
        if t.kind is Kind.PUNCT and t.value in "([{":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            depth -= 1
            if depth == 0:
                return j
    raise refuse("a bracket is never closed", HINT)


def _after_dot(tokens: list[Token], i: int) -> bool:
    """A property key (`n.set`), which is never a keyword or a function to the engine."""
    return i > 0 and tokens[i - 1].kind is Kind.PUNCT and tokens[i - 1].value == "."


def _next_is(tokens: list[Token], i: int, punct: str) -> bool:
    return i + 1 < len(tokens) and tokens[i + 1].kind is Kind.PUNCT and tokens[i + 1].value == punct


def _strings(values: Sequence[Any] | Any) -> list[str]:
    out: list[str] = []
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list | tuple):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
    return out


def _used_params(tokens: list[Token], params: Mapping[str, Any]) -> dict[str, Any]:
    names = {t.value for t in tokens if t.kind is Kind.PARAM}
    missing = sorted(names - set(params))
    if missing:
        raise refuse(
            f"the query names parameter(s) {', '.join('$' + m for m in missing)} that were not given",
            'pass them in params, e.g. {"label": "Person"}',
        )
    return {k: v for k, v in params.items() if k in names}


# -- the rewrite -------------------------------------------------------------------------------


def _rewrite(
    query: str, comments: list[tuple[int, int]], tokens: list[Token], params: Mapping[str, Any], cap: int
) -> str:
    """The query without comments or trailing `;`, with each final RETURN limited to `cap` rows."""
    edits: list[tuple[int, int, str]] = [(a, b, " ") for a, b in comments]
    for branch in _branches(tokens):
        edits.append(_limit_edit(branch, params, cap))
    end = tokens[-1].end
    out, pos = [], 0
    for a, b, text in sorted(e for e in edits if e[0] < end or e[0] == e[1] == end):
        out.append(query[pos:a])
        out.append(text)
        pos = max(pos, b)
    out.append(query[pos:end])
    return "".join(out)


def _branches(tokens: list[Token]) -> list[list[Token]]:
    """The UNION branches of the query: LIMIT binds to one branch only in the engine."""
    branches: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.kind is Kind.PUNCT and t.value in "([{":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            depth -= 1
        if depth == 0 and t.is_word("UNION"):
            branches.append([])
            continue
        if depth == 0 and t.is_word("ALL") and branches[-1] == [] and len(branches) > 1:
            continue
        branches[-1].append(t)
    if any(not b for b in branches):
        raise refuse("a UNION needs a query on each side", HINT)
    return branches


def _limit_edit(branch: list[Token], params: Mapping[str, Any], cap: int) -> tuple[int, int, str]:
    depth, last_return, limit_at = 0, -1, -1
    for i, t in enumerate(branch):
        if t.kind is Kind.PUNCT and t.value in "([{":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            depth -= 1
        elif depth == 0 and t.is_word("RETURN"):
            last_return, limit_at = i, -1
        elif depth == 0 and t.is_word("LIMIT") and last_return >= 0:
            limit_at = i
    end = branch[-1].end
    if last_return < 0:
        raise refuse("a query must end with RETURN", "e.g. CALL show_tables() RETURN *")
    if limit_at < 0:
        return (end, end, f" LIMIT {cap}")
    rest = branch[limit_at + 1 :]
    if len(rest) == 1 and rest[0].kind is Kind.NUMBER and rest[0].value.isdigit():
        asked = int(rest[0].value)
    elif len(rest) == 1 and rest[0].kind is Kind.PARAM and type(params.get(rest[0].value)) is int:
        asked = params[rest[0].value]
    else:
        raise refuse("LIMIT takes a whole number or an integer $parameter here", HINT)
    return (rest[0].start, rest[0].end, str(max(0, min(asked, cap))))
