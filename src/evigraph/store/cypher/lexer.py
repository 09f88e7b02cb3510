"""Splitting agent-written Cypher into tokens exactly as the engine's grammar would.

The read-only guard judges tokens, so this lexer must never see a different program than the
engine does. It follows the Kuzu grammar (src/antlr4/Cypher.g4) where that is unambiguous and
refuses everything else instead of guessing: a string or comment that never ends, an escape the
grammar does not know, a number glued to a letter, and any character outside strings that is
not printable ASCII. The last rule is what closes the look-alike tricks: the engine accepts
Unicode letters in names, Unicode dashes and angle brackets as arrows and several Unicode spaces
as whitespace, so a fullwidth `ＣＲＥＡＴＥ`, a Cyrillic `С`, a zero-width space or a line
separator could make the two readings differ. Inside strings any printable text is fine, but
format and control characters (zero-width, bidi overrides) are refused there too, since they
hide what a string says from a reviewer.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from enum import Enum

from evigraph.errors import CypherRefused

HINT = "write plain ASCII Cypher outside string literals (one MATCH ... RETURN statement)"


class Kind(Enum):
    WORD = "word"  # an unquoted name or keyword
    QUOTED = "quoted"  # a backtick-quoted name: never a keyword to the engine, but checked like one
    STRING = "string"
    NUMBER = "number"
    PARAM = "param"
    PUNCT = "punct"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str  # as written in the query
    value: str  # names unquoted, strings with escapes decoded, parameters without `$`
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        """An unquoted keyword among `words` (upper case)."""
        return self.kind is Kind.WORD and self.value.upper() in words

    @property
    def is_name(self) -> bool:
        return self.kind in (Kind.WORD, Kind.QUOTED)


@dataclass(frozen=True)
class Lexed:
    tokens: list[Token]
    comments: list[tuple[int, int]]  # spans of comments, which the engine must never be sent


_PUNCT = frozenset("()[]{},.:;=<>+-*/%^|!&~?")
_SPACE = frozenset(" \t\n")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
_BOX_DRAWING = range(0x2500, 0x2580)  # the engine draws its plans with these; see cypher_plan


def tokenize(query: str) -> Lexed:
    """Tokens and comment spans of `query`, or CypherRefused naming the first thing it cannot read."""
    return _Lexer(query).run()


def refuse(message: str, hint: str = HINT) -> CypherRefused:
    return CypherRefused(message, hint=hint)


class _Lexer:
    def __init__(self, query: str) -> None:
        self.q = query
        self.i = 0
        self.tokens: list[Token] = []
        self.comments: list[tuple[int, int]] = []

    def run(self) -> Lexed:
        q = self.q
        while self.i < len(q):
            c = q[self.i]
            if c in _SPACE:
                self.i += 1
            elif c == "\r":
                # The engine ends a `//` comment at CR only when LF or the end follows; a lone CR
                # would end it for us but not for the engine.
                if q[self.i + 1 : self.i + 2] != "\n":
                    raise refuse("a carriage return not followed by a line feed is refused")
                self.i += 2
            elif q.startswith("//", self.i):
                end = len(q)
                for j in range(self.i + 2, len(q)):
                    if q[j] in "\r\n":
                        end = j
                        break
                self._comment(end)
            elif q.startswith("/*", self.i):
                end = q.find("*/", self.i + 2)
                if end < 0:
                    raise refuse("a /* comment is never closed")
                self._comment(end + 2)
            elif q.startswith("..", self.i):
                self._emit(Kind.PUNCT, self.i + 2, "..")
            elif c in "'\"":
                self._string(c)
            elif c == "`":
                self._quoted()
            elif c == "$":
                self._param()
            elif c.isascii() and (c.isalpha() or c == "_"):
                self._word()
            elif (c.isascii() and c.isdigit()) or (c == "." and q[self.i + 1 : self.i + 2].isdigit()):
                self._number()
            elif c in _PUNCT:
                self._emit(Kind.PUNCT, self.i + 1, c)
            else:
                raise refuse(f"character {_describe(c)} at offset {self.i} is refused outside a string")
        return Lexed(self.tokens, self.comments)

    def _emit(self, kind: Kind, end: int, value: str) -> None:
        self.tokens.append(Token(kind, self.q[self.i : end], value, self.i, end))
        self.i = end

    def _comment(self, end: int) -> None:
        for ch in self.q[self.i : end]:
            if not (ch.isascii() and (ch.isprintable() or ch == "\t")):
                raise refuse(f"character {_describe(ch)} inside a comment is refused")
        self.comments.append((self.i, end))
        self.i = end

    def _string(self, quote: str) -> None:
        q, j, out = self.q, self.i + 1, []
        while True:
            if j >= len(q):
                raise refuse("a string literal is never closed")
            ch = q[j]
            if ch == quote:
                break
            if ch == "\\":
                j, decoded = _escape(q, j)
                out.append(decoded)
                continue
            _check_text_char(ch, "a string")
            out.append(ch)
            j += 1
        value = "".join(out)
        for ch in value:  # what escapes spell is held to the same rules as what is written
            _check_text_char(ch, "a string (after escapes)")
        self._emit(Kind.STRING, j + 1, value)

    def _quoted(self) -> None:
        q, j, out = self.q, self.i, []
        while j < len(q) and q[j] == "`":  # `a``b` is one name, a`b, as in the grammar
            end = q.find("`", j + 1)
            if end < 0:
                raise refuse("a `quoted name` is never closed")
            out.append(q[j + 1 : end])
            j = end + 1
        value = "`".join(out)
        if not value:
            raise refuse("an empty `` name is refused")
        for ch in value:
            _check_text_char(ch, "a `quoted name`")
        self._emit(Kind.QUOTED, j, value)

    def _param(self) -> None:
        q, j = self.q, self.i + 1
        while j < len(q) and q[j].isascii() and (q[j].isalnum() or q[j] == "_"):
            j += 1
        name = q[self.i + 1 : j]
        if not name or (name[0].isdigit() and not name.isdigit()):
            raise refuse("a parameter is $ followed by a plain name, e.g. $label")
        self._emit(Kind.PARAM, j, name)

    def _word(self) -> None:
        q, j = self.q, self.i
        while j < len(q) and q[j].isascii() and (q[j].isalnum() or q[j] == "_"):
            j += 1
        if q[j : j + 1] == "$":  # the engine reads currency signs as part of a name
            raise refuse(f"a $ right after the name {q[self.i : j]!r} is refused")
        self._emit(Kind.WORD, j, q[self.i : j])

    def _number(self) -> None:
        q, j = self.q, self.i
        while j < len(q) and q[j].isdigit() and q[j].isascii():
            j += 1
        # `1..3` is a range in a variable-length pattern, not a decimal
        if q[j : j + 1] == "." and q[j + 1 : j + 2].isdigit() and q[j + 1 : j + 2].isascii():
            j += 1
            while j < len(q) and q[j].isdigit() and q[j].isascii():
                j += 1
        if q[j : j + 1] in ("e", "E"):
            k = j + 1 + (q[j + 1 : j + 2] == "-")
            if q[k : k + 1].isdigit() and q[k : k + 1].isascii():
                j = k
                while j < len(q) and q[j].isdigit() and q[j].isascii():
                    j += 1
        if j < len(q) and (q[j].isalnum() or q[j] == "_"):
            raise refuse(f"a number glued to a name at offset {self.i} is refused (hex and suffixes included)")
        self._emit(Kind.NUMBER, j, q[self.i : j])


def _escape(q: str, j: int) -> tuple[int, str]:
    """The character a backslash escape at `j` spells, and where the string goes on."""
    nxt = q[j + 1 : j + 2]
    if nxt in _ESCAPES:
        return j + 2, _ESCAPES[nxt]
    if nxt.lower() == "u":
        for width in (8, 4):  # the grammar takes eight hex digits before four
            digits = q[j + 2 : j + 2 + width]
            if len(digits) == width and all(d in _HEX for d in digits):
                code = int(digits, 16)
                if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                    raise refuse(f"the escape \\{nxt}{digits} is not a character")
                return j + 2 + width, chr(code)
        raise refuse("a \\u escape needs four or eight hex digits")
    raise refuse(f"the escape \\{nxt or '(end)'} is not one the engine knows (\\n \\t \\\\ \\' \\\" \\uXXXX ...)")


def _check_text_char(ch: str, where: str) -> None:
    if ch in "\n\t":
        return
    if ord(ch) in _BOX_DRAWING:
        raise refuse(f"box-drawing character {_describe(ch)} inside {where} is refused")
    if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        raise refuse(f"invisible or control character {_describe(ch)} inside {where} is refused")


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")
