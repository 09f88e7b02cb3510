"""How big, how deep and how fast-growing an agent's query may be, checked on its tokens before any
engine sees it.

Both engines parse and plan outside their time limits, and neither bounds the memory an expression
builds, so these limits are what keep one query from stalling or crashing a server. Each is an
engine limit found by bisection (bench/cypher_bounds.py re-measures them), kept with a wide margin:

- Nesting. FalkorDB's parser doubles its time with every level of any nesting: brackets, function
  calls, CASE, and prefix operators (`NOT`, unary `-`) alike: 12 levels 0.05 s, 16 0.3-1.3 s, 20
  4-9 s, 24 negations 35 s, during which a server thread serves nobody. Kuzu doubles per nested
  CASE (12: 0.2-0.4 s, 20: 16 s), grows cubically with nested lists (200: 3.9 s, 300: 30 s, holding
  the interpreter lock) and overflows its stack near 800 nested calls (SIGSEGV, taking the server
  down). MAX_DEPTH = 10, a CASE counting two, keeps both engines' parse to milliseconds (FalkorDB
  3-12 ms at 10 levels on a busy machine, Kuzu 1 ms for 5 nested CASEs).
- Size. Kuzu parses a flat chain of 4,000 `+` in 1.2 s (quadratic); 2,000 tokens take under 0.1 s.
- Relationship patterns. Kuzu plans a star of 15 relationships in 1.1 s and of 20 in 4.6 s, holding
  the interpreter lock (FalkorDB: milliseconds); 10 take 0.26 s.
- Hops. A variable-length pattern needs an upper bound of at most MAX_HOPS: FalkorDB reads `*` as
  unbounded, Kuzu as 1..30, and the paths of 30 hops filled a 256 MB page cache in 6 s.
- Growth. `WITH 'x' AS s WITH s + s AS s ...` doubles a value per clause (26 clauses: 5.45 GB in
  77 s, beyond Kuzu's time limit); `list_concat(l, l)` chains are not even held to its page cache
  (17 clauses: 3 GB). `_Growth` bounds how many copies of a base value (a property, a literal, a
  parameter) any expression can hold, with collected lists counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from evigraph.store.cypher.lexer import Kind, Token, refuse
from evigraph.store.cypher.statement import CLAUSES, VALUE_WORDS, after_operand, is_keyword

MAX_TOKENS = 2_000
MAX_DEPTH = 10
CASE_LEVELS = 2
"""A CASE counts as two levels: in one warm process Kuzu planned 5 nested CASEs in 1 ms, 10 in 11 ms,
12 in 52 ms and 14 in 144 ms, where 14 nested brackets take 0.4 ms."""
MAX_RELATIONSHIPS = 10
MAX_HOPS = 10
MAX_COPIES = 16
"""Copies of base values one expression may hold (`a.x + a.y` holds 2, `s + s` twice what s holds)."""
MAX_COLLECTED_COPIES = 4
"""The same for a value holding a list of unknown length (`collect`, a comprehension, `range`):
each item may hold at most this many copies, and a list of such lists is refused."""

HINT = "write a smaller query: fewer nested brackets, CASEs and NOTs, fewer relationship patterns, bounded hops"
_HOP_WORDS = frozenset({"SHORTEST", "ALL", "TRAIL", "ACYCLIC", "WSHORTEST"})
_OPERAND_END = frozenset({Kind.WORD, Kind.QUOTED, Kind.STRING, Kind.NUMBER, Kind.PARAM})


def check_bounds(tokens: list[Token]) -> None:
    """Refuse a query over any bound, naming the bound and how to stay under it."""
    if len(tokens) > MAX_TOKENS:
        raise refuse(f"the query has {len(tokens)} tokens; free-form Cypher takes at most {MAX_TOKENS}", HINT)
    depth = nesting_depth(tokens)
    if depth > MAX_DEPTH:
        raise refuse(
            f"the query nests {depth} levels deep (brackets, calls, CASE, NOT and unary minus each count); "
            f"at most {MAX_DEPTH} are allowed",
            HINT,
        )
    relationships = sum(
        1
        for i in range(len(tokens) - 1)
        if tokens[i].kind is Kind.PUNCT and tokens[i].value == ")" and tokens[i + 1].value in ("-", "<")
    )
    if relationships > MAX_RELATIONSHIPS:
        raise refuse(
            f"the query has {relationships} relationship patterns; at most {MAX_RELATIONSHIPS} are allowed",
            "split it into several queries, or walk with explore_relationships",
        )
    _check_hops(tokens)
    _Growth(tokens).check()


def nesting_depth(tokens: list[Token]) -> int:
    """The deepest level any token sits at: each open bracket and CASE adds one until it closes, and
    each prefix operator (`NOT`, unary `-` or `+`) one for its operand, as both parsers recurse."""
    stack: list[int] = []
    level, prefix, deepest = 0, 0, 0
    for i, t in enumerate(tokens):
        if (t.kind is Kind.PUNCT and t.value in "([{") or t.is_word("CASE"):
            stack.append(level)
            level += prefix + (CASE_LEVELS if t.is_word("CASE") else 1)
            prefix = 0
        elif (t.kind is Kind.PUNCT and t.value in ")]}") or t.is_word("END"):
            level = stack.pop() if stack else 0
            prefix = 0
        elif t.is_word("NOT") or (t.kind is Kind.PUNCT and t.value in "-+" and not after_operand(tokens, i)):
            prefix += 1
        elif t.kind in _OPERAND_END:
            prefix = 0
        deepest = max(deepest, level + prefix)
    return deepest


def _check_hops(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not (t.kind is Kind.PUNCT and t.value == "*" and _in_relationship(tokens, i)):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].kind is Kind.WORD and tokens[j].value.upper() in _HOP_WORDS:
            j += 1
        upper: int | None = None
        if j < len(tokens) and tokens[j].kind is Kind.NUMBER:
            upper = int(tokens[j].value) if tokens[j].value.isdigit() else None
            j += 1
        if j < len(tokens) and tokens[j].kind is Kind.PUNCT and tokens[j].value == "..":
            after = tokens[j + 1] if j + 1 < len(tokens) else None
            bounded = after is not None and after.kind is Kind.NUMBER and after.value.isdigit()
            upper = int(after.value) if after is not None and bounded else None
        if upper is None or upper > MAX_HOPS:
            raise refuse(
                f"a variable-length pattern needs an upper bound of at most {MAX_HOPS} hops",
                "write the hops, e.g. -[:RELATES*1..3]->",
            )


def _in_relationship(tokens: list[Token], i: int) -> bool:
    """Whether the `*` at i stands inside a `-[...]` relationship pattern (not a multiplication)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        t = tokens[j]
        if t.kind is Kind.PUNCT and t.value in ")]}":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in "([{":
            if depth == 0:
                return t.value == "[" and j > 0 and tokens[j - 1].value == "-"
            depth -= 1
    return False


# -- growth ------------------------------------------------------------------------------------

_LISTS = frozenset({"collect", "range", "nodes", "rels", "relationships", "string_split", "split", "keys"})
"""Functions whose value is a list of unknown length: each item counts, the list is one more level."""
_SCALARS = frozenset({"count", "size", "length", "id", "typeof", "label", "labels", "type", "exists"})
"""Functions whose value is small whatever their arguments hold."""


@dataclass(frozen=True)
class Weight:
    """How many copies of a bound value an expression may hold: `copies` × (an unknown
    length)^`lists`. Literals, parameters and properties are `base`: each is bounded (by the query's
    size, the parameters' checks, the stored values), so an expression of nothing else counts one
    copy however many it names; only names carried from clause to clause multiply."""

    copies: int
    lists: int = 0
    base: bool = False

    def __add__(self, other: Weight) -> Weight:
        return Weight(self.copies + other.copies, max(self.lists, other.lists), self.base or other.base)

    def value(self) -> Weight:
        """What a name bound to this expression holds."""
        return Weight(max(self.copies, 1 if self.base else 0), self.lists)

    def listed(self) -> Weight:
        held = self.value()
        return Weight(held.copies, held.lists + 1)

    def item(self) -> Weight:
        return Weight(self.copies, max(0, self.lists - 1), self.base)


_NOTHING = Weight(0)
_BASE = Weight(0, base=True)


class _Growth:
    """An upper bound on what every expression of the query holds, names carried from clause to clause.

    Over-approximates: scopes are ignored (a name keeps the largest weight it was ever given), a
    function's value holds what all its arguments hold, a CASE what all its branches hold. A name the
    query never binds with AS (a matched node) holds one base value per property read.
    """

    def __init__(self, tokens: list[Token]) -> None:
        self.t = tokens
        self.close = _matching(tokens)
        self.names: dict[str, Weight] = {}

    def check(self) -> None:
        self._segments(0, len(self.t))

    def _segments(self, a: int, b: int) -> None:
        """Each top-level expression of t[a:b] (between clause words and commas), binding AS names."""
        start, i = a, a
        while i < b:
            t = self.t[i]
            if t.kind is Kind.PUNCT and t.value in "([{":
                i = self.close[i] + 1
                continue
            if (t.kind is Kind.PUNCT and t.value == ",") or (t.kind is Kind.WORD and t.value.upper() in CLAUSES):
                self._segment(start, i)
                start = i + 1
            i += 1
        self._segment(start, b)

    def _segment(self, a: int, b: int) -> None:
        alias_at = next((i for i in range(b - 1, a - 1, -1) if self.t[i].is_word("AS") and self._top(a, i)), -1)
        end = alias_at if alias_at >= 0 else b
        weight = self._weigh(a, end).value()
        _limit(weight)
        if alias_at >= 0 and alias_at + 1 < b and self.t[alias_at + 1].is_name:
            unwound = any(self.t[k].is_word("UNWIND") for k in range(max(0, a - 1), a))
            self._bind(self.t[alias_at + 1].value, weight.item() if unwound else weight)

    def _top(self, a: int, i: int) -> bool:
        """Whether token i is outside every bracket opened after a."""
        j = a
        while j < i:
            if self.t[j].kind is Kind.PUNCT and self.t[j].value in "([{":
                if self.close[j] >= i:
                    return False
                j = self.close[j]
            j += 1
        return True

    def _bind(self, name: str, weight: Weight) -> None:
        old = self.names.get(name, _NOTHING)
        self.names[name] = Weight(max(old.copies, weight.copies), max(old.lists, weight.lists))

    def _weigh(self, a: int, b: int) -> Weight:
        total = _NOTHING
        i = a
        while i < b:
            t = self.t[i]
            if t.kind is Kind.PUNCT and t.value in "([{":
                end = self.close[i]
                total += self._group(i, end)
                i = end + 1
                continue
            if t.is_name and i + 1 < b and self.t[i + 1].kind is Kind.PUNCT and self.t[i + 1].value == "(":
                end = self.close[i + 1]
                total += self._call(t.value.lower(), i + 1, end)
                i = end + 1
                continue
            total += self._atom(i)
            i += 1
        return total

    def _atom(self, i: int) -> Weight:
        t = self.t[i]
        literal = t.kind is Kind.WORD and t.value.upper() in VALUE_WORDS
        if literal or t.kind in (Kind.STRING, Kind.NUMBER, Kind.PARAM):
            return _BASE
        if not t.is_name or is_keyword(t):
            return _NOTHING
        before = self.t[i - 1] if i > 0 else None
        after = self.t[i + 1] if i + 1 < len(self.t) else None
        if before is not None and before.kind is Kind.PUNCT and before.value == ".":
            return _NOTHING  # a property key: counted with the name it belongs to
        if after is not None and after.kind is Kind.PUNCT and after.value == "." and t.value not in self.names:
            return _BASE  # a property of a matched node or relationship
        in_map = self._in_map(i)
        if before is not None and before.kind is Kind.PUNCT and before.value == ":" and not in_map:
            return _NOTHING  # a label or a relationship type
        if after is not None and after.kind is Kind.PUNCT and after.value == ":" and in_map:
            return _NOTHING  # a map key
        return self.names.get(t.value, _BASE)

    def _in_map(self, i: int) -> bool:
        """Whether the innermost bracket around token i is a `{...}`."""
        for j in range(i - 1, -1, -1):
            t = self.t[j]
            if t.kind is Kind.PUNCT and t.value in "([{" and self.close[j] > i:
                return t.value == "{"
        return False

    def _group(self, open_at: int, end: int) -> Weight:
        opener = self.t[open_at].value
        inner = self._split(open_at + 1, end)
        if opener == "[" and len(inner) == 1:
            a, b = inner[0]
            if b - a >= 3 and self.t[a].is_name and self.t[a + 1].is_word("IN"):
                return self._comprehension(a, b)
            if a < b and self.t[a].kind is Kind.PUNCT and self.t[a].value == "(":
                return self._weigh(a, b).listed()  # a pattern comprehension: one item per match
        if opener == "{":
            self._segments(open_at + 1, end)  # a subquery (EXISTS { ... }, CALL { ... }) or a map
        weights = [self._weigh(a, b) for a, b in inner]
        for w in weights:
            _limit(w.value())
        return sum(weights, _NOTHING)

    def _comprehension(self, a: int, b: int) -> Weight:
        """`[x IN list WHERE ... | expr]`: one item per element of the list."""
        bar = next((i for i in range(a, b) if self.t[i].value == "|" and self._top(a, i)), -1)
        source = self._weigh(a + 2, bar if bar >= 0 else b)
        self._bind(self.t[a].value, source.value().item())
        if bar < 0:
            return source
        return self._weigh(bar + 1, b).listed()

    def _call(self, name: str, open_at: int, end: int) -> Weight:
        args = self._split(open_at + 1, end)
        if name == "reduce" and args:
            return self._reduce(args, end)
        weights = [self._weigh(a, b) for a, b in args]
        for w in weights:
            _limit(w.value())
        total = sum(weights, _NOTHING)
        if name in _SCALARS:
            return _BASE
        if name in _LISTS:
            return (total if total.copies else _BASE).listed()
        return total

    def _reduce(self, args: list[tuple[int, int]], end: int) -> Weight:
        """`reduce(acc = init, x IN list | body)`: the body runs once per element, so an accumulator
        it names twice doubles per element."""
        a, b = args[0]
        if not (b - a >= 3 and self.t[a].is_name and self.t[a + 1].value == "="):
            return self._weigh(a, end)
        acc = self.t[a].value
        init = self._weigh(a + 2, b)
        body_at = next((i for i in range(args[-1][0], end) if self.t[i].value == "|"), end)
        uses = sum(1 for i in range(body_at + 1, end) if self.t[i].is_name and self.t[i].value == acc)
        if uses > 1:
            raise refuse(f"reduce() names its accumulator {acc} {uses} times, so its value doubles per element", HINT)
        self._bind(acc, init.value())
        if len(args) > 1:
            c, d = args[1]
            if d - c >= 2 and self.t[c].is_name and self.t[c + 1].is_word("IN"):
                self._bind(self.t[c].value, self._weigh(c + 2, body_at if body_at < d else d).value().item())
        return (init + self._weigh(body_at + 1, end)).listed()

    def _split(self, a: int, b: int) -> list[tuple[int, int]]:
        """t[a:b] split at its top-level commas."""
        parts, start, i = [], a, a
        while i < b:
            t = self.t[i]
            if t.kind is Kind.PUNCT and t.value in "([{":
                i = self.close[i] + 1
                continue
            if t.kind is Kind.PUNCT and t.value == ",":
                parts.append((start, i))
                start = i + 1
            i += 1
        parts.append((start, b))
        return [(x, y) for x, y in parts if x < y]


def _limit(weight: Weight) -> None:
    if weight.lists > 1:
        raise refuse("the query builds lists of lists of unknown length (e.g. collect() of collected lists)", HINT)
    bound = MAX_COLLECTED_COPIES if weight.lists else MAX_COPIES
    if weight.copies > bound:
        raise refuse(
            f"a value of this query can hold {weight.copies} copies of its inputs (e.g. s + s repeated over "
            f"clauses); at most {bound} are allowed{' per list item' if weight.lists else ''}",
            HINT,
        )


def _matching(tokens: list[Token]) -> list[int]:
    """For each opening bracket, the index of its closing one (every bracket is balanced by then)."""
    out = list(range(len(tokens)))
    stack: list[int] = []
    for i, t in enumerate(tokens):
        if t.kind is Kind.PUNCT and t.value in "([{":
            stack.append(i)
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            if not stack:
                raise refuse("a bracket closes that was never opened", HINT)
            out[stack.pop()] = i
    if stack:
        raise refuse("a bracket is never closed", HINT)
    return out
