"""The engine-independent part of the guard: one read-only statement over the knowledge graph.

Each backend's guard calls these in order and adds its dialect's checks (functions, procedures,
casts, computed keys). The engine then gets a rewrite, not the original: comments are removed (so
no disagreement about where one ends can hide code), and every UNION branch's final RETURN gets a
LIMIT, so the engine stops producing rows at the row cap instead of materialising all of them.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evigraph.errors import UnknownLabel
from evigraph.store.core.schema_names import CYPHER_TABLES
from evigraph.store.cypher.lexer import Kind, Token, refuse, tokenize
from evigraph.store.cypher.rules import FORBIDDEN_KEYWORDS, HIDDEN_PROPERTIES, HINT, LABEL_HINT, RANGE_MAX_ITEMS, STARTS

Edit = tuple[int, int, str]
"""Replace the query text from offset a to b with the string."""

_READABLE = {name.casefold(): name for name in CYPHER_TABLES}


@dataclass(frozen=True)
class Guarded:
    text: str  # what the engine runs
    params: dict[str, Any]  # only the parameters the query names (the engines refuse extra ones)


def one_statement(tokens: list[Token]) -> list[Token]:
    semis = [i for i, t in enumerate(tokens) if t.kind is Kind.PUNCT and t.value == ";"]
    if semis and semis != [len(tokens) - 1]:
        raise refuse("free-form Cypher runs one statement; this query has several", HINT)
    body = tokens[:-1] if semis else tokens
    if not body:
        raise refuse("the query is empty", HINT)
    return body


def check_keywords(tokens: list[Token]) -> None:
    found: list[str] = []
    for i, t in enumerate(tokens):
        if not t.is_name or after_dot(tokens, i):
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
        if t.kind is Kind.PUNCT and t.value == "." and next_is(tokens, i, "*"):
            raise refuse("n.* is refused: it returns internal properties", "return the node itself, or name properties")


def check_hidden(tokens: list[Token], params: Mapping[str, Any]) -> None:
    """No internal property named anywhere: as a name, a quoted name, a string or a parameter value."""
    # NFKC and casefold, so a fullwidth or compatibility spelling inside quotes is caught too
    names = {folded(t.value) for t in tokens if t.is_name or t.kind is Kind.STRING}
    names |= {folded(v) for v in strings(list(params.values()))}
    hidden = sorted(names & HIDDEN_PROPERTIES)
    if hidden:
        raise refuse(
            f"queries do not return {' or '.join(hidden)}: vectors, index text and passage contexts are internal",
            "return text, name, description or other properties (get_ontology lists them); "
            "for similarity use search_passages",
        )


def check_labels(tokens: list[Token]) -> set[str]:
    """The labels and relationship types the query names, refused unless all are the knowledge
    graph's: bookkeeping and agents' records are outside free-form Cypher by an allow-list."""
    named = labels(tokens)
    foreign = sorted(n for n in named if n.casefold() not in _READABLE)
    if foreign:
        raise UnknownLabel(f"free-form Cypher reads the knowledge graph only, not {', '.join(foreign)}", LABEL_HINT)
    return named


def readable_table(name: str) -> bool:
    return name.casefold() in _READABLE


def labels(tokens: list[Token]) -> set[str]:
    """Labels and relationship types the query names: names after `:` directly inside a node
    pattern's `(...)` or a relationship's `-[...]`, and after `|` between alternatives (`:A|B`).
    A `[` not preceded by `-` is a list or a slice (`l[1:n]`), whose colon is no label."""
    stack: list[str] = []
    out: set[str] = set()
    last = -1  # index of the last label or type collected
    for i, t in enumerate(tokens):
        if t.kind is Kind.PUNCT and t.value in "([{":
            relationship = t.value == "[" and i > 0 and tokens[i - 1].kind is Kind.PUNCT and tokens[i - 1].value == "-"
            stack.append("r" if relationship else t.value)
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            if stack:
                stack.pop()
        elif t.is_name and i > 0 and stack and stack[-1] in ("(", "r"):
            before = tokens[i - 1]
            after_colon = before.kind is Kind.PUNCT and before.value == ":"
            after_bar = before.kind is Kind.PUNCT and before.value == "|" and last == i - 2
            if after_colon or after_bar:
                out.add(t.value)
                last = i
    return out


def folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def check_range(tokens: list[Token], i: int) -> None:
    """`range()` at token i takes integer literals spanning at most RANGE_MAX_ITEMS: both engines
    build the whole list, outside their time limits."""
    close = closing(tokens, i + 1)
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


def closing(tokens: list[Token], open_at: int) -> int:
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


CLAUSES = frozenset(
    {"MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNWIND", "ORDER", "SKIP", "LIMIT", "UNION", "CALL", "YIELD"}
)
KEYWORDS = CLAUSES | frozenset(
    {
        *("AND", "OR", "XOR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "CASE", "WHEN", "THEN", "ELSE", "END"),
        *("DISTINCT", "AS", "STARTS", "ENDS", "CONTAINS", "ASC", "DESC", "ASCENDING", "DESCENDING", "BY"),
        *("ALL", "ANY", "NONE", "SINGLE", "EXISTS", "COUNT", "SHORTEST", "WSHORTEST", "TRAIL", "ACYCLIC"),
    }
)
VALUE_WORDS = frozenset({"NULL", "TRUE", "FALSE"})


def is_keyword(t: Token) -> bool:
    return t.kind is Kind.WORD and t.value.upper() in KEYWORDS


def after_operand(tokens: list[Token], i: int) -> bool:
    """Whether token i follows a value or a closing bracket: a `-` there is binary, a `[` indexes."""
    if i == 0:
        return False
    before = tokens[i - 1]
    if before.kind is Kind.PUNCT:
        return before.value in ")]}"
    if before.kind is Kind.WORD:
        return before.value.upper() in VALUE_WORDS or before.value.upper() == "END" or not is_keyword(before)
    return True


def after_dot(tokens: list[Token], i: int) -> bool:
    """A property key (`n.set`), which is never a keyword or a function to the engine."""
    return i > 0 and tokens[i - 1].kind is Kind.PUNCT and tokens[i - 1].value == "."


def next_is(tokens: list[Token], i: int, punct: str) -> bool:
    return i + 1 < len(tokens) and tokens[i + 1].kind is Kind.PUNCT and tokens[i + 1].value == punct


def strings(values: Sequence[Any] | Any) -> list[str]:
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


def finish(
    query: str,
    comments: list[tuple[int, int]],
    tokens: list[Token],
    params: Mapping[str, Any],
    row_cap: int,
    edits: Sequence[Edit] = (),
) -> Guarded:
    """The text the engine runs (`rewrite`) and the parameters it names."""
    text = rewrite(query, comments, tokens, params, row_cap, edits)
    # from the rewrite: a `LIMIT $n` it clamped to a literal no longer names $n
    return Guarded(text, used_params(tokenize(text).tokens, params))


def used_params(tokens: list[Token], params: Mapping[str, Any]) -> dict[str, Any]:
    names = {t.value for t in tokens if t.kind is Kind.PARAM}
    missing = sorted(names - set(params))
    if missing:
        raise refuse(
            f"the query names parameter(s) {', '.join('$' + m for m in missing)} that were not given",
            'pass them in params, e.g. {"label": "Person"}',
        )
    return {k: v for k, v in params.items() if k in names}


# -- the rewrite -------------------------------------------------------------------------------


def rewrite(
    query: str,
    comments: list[tuple[int, int]],
    tokens: list[Token],
    params: Mapping[str, Any],
    cap: int,
    extra: Sequence[Edit] = (),
) -> str:
    """The query without comments or trailing `;`, with each final RETURN limited to `cap` rows
    and the dialect's own `extra` edits (which never overlap a comment or each other)."""
    edits: list[Edit] = [(a, b, " ") for a, b in comments]
    edits.extend(extra)
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


def _limit_edit(branch: list[Token], params: Mapping[str, Any], cap: int) -> Edit:
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
        raise refuse("a query must end with RETURN", "e.g. MATCH (e:Entity) RETURN e.name LIMIT 10")
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
