"""How two entity names are compared: comparison forms, blocking keys and the similarity measures.

Resolution at finalize never compares every pair of entities. A name is filed under keys that a
second spelling of the same name would most likely share (a word, a word one typo away, initials
and surname, an acronym), and only names filed under one key are compared; `candidates` builds
those blocks. This module says what the keys and the comparisons are, so the blocking and the
resolvers judge names the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from evigraph.models import normalize_name

STOPWORDS = frozenset({"of", "the", "and", "for", "on", "in", "at", "to", "a", "an", "de", "la", "le", "du", "des"})
"""Words an acronym skips ("Treaty on the Functioning of the European Union" is TFEU) and that
identify nothing on their own, so they are no blocking key."""

LEGAL_SUFFIXES = frozenset(
    {
        *("inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "llc", "llp", "lp"),
        *("plc", "gmbh", "ag", "sa", "se", "nv", "bv", "srl", "spa", "oy", "ab", "pty", "holdings"),
    }
)
"""Words a company's name is written with or without ("Airbus SE" is Airbus, "Acme Corp" is "Acme
Corporation"): names equal once trailing ones are dropped are one name."""

RULE_SCORES = {"same": 1.0, "suffix": 0.97, "initials": 0.93, "typo": 0.92, "acronym": 0.9}
"""How sure each name rule is, for ordering pairs: an equal comparison form is the same name; a
dropped company suffix almost surely; initials and acronyms can expand to several names, which
is why the fuzzy resolver merges those only when the expansion is unique."""

MIN_ACRONYM = 3
SHORT_ACRONYM_SCORE = 0.75
"""What an acronym of two letters scores ("PA" for "Page Airport", "NY" for "New York"): with 676
of them for every name there is, it is a lead for a judge that reads passages, not a merge."""

QUALIFIED_SCORE = 0.75
"""The most a pair scores when one name carries a qualifier the other lacks ("Giuseppe Verdi (film)"
and "Giuseppe Verdi"): it may be the same thing or another sense of the name, which names alone
cannot tell, so the pair stays a candidate for a judge that reads passages, below any threshold
that merges on names. Two different qualifiers ("Bloody Mary (cocktail)" and "Bloody Mary
(folklore)") are two things: 0. Document titles bring these: a title's entity also has its
name without the qualifier as an alias, which alone would make every sense of a name one."""

MIN_TYPO_TOKEN = 5
"""Words this long or longer are also filed under their one-letter deletions, so "Tchaikovsky" and
"Tchaikovski" share a key. Shorter words would share deletions with too many unrelated words
("Lisa" and "Lima" both give "lia")."""

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_QUALIFIER = re.compile(r"\(([^()]+)\)\s*$")


@lru_cache(maxsize=65536)
def comparison_form(name: str) -> str:
    """A name as resolution compares it: `normalize_name`, accents dropped, punctuation as spaces.

    "Beyoncé" and "Beyonce", "Coca-Cola" and "Coca Cola", "J. Smith" and "J Smith" are one form.
    """
    text = normalize_name(name)
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(_NON_WORD.sub(" ", text).split())


@dataclass(frozen=True)
class Names:
    """An entity's names as resolution compares them."""

    forms: tuple[str, ...]
    """The distinct comparison forms of its name and aliases; a form of one character is no name."""
    acronyms: frozenset[str]
    """Its names written as an acronym ("IBM", "U.S."), lower-cased without dots. Only a name in
    capitals counts: the word "Game" is no acronym of "Global Alliance in Management Education"."""
    qualifier: str = ""
    """What its name says in closing parentheses, the sense it is ("cocktail" for "Bloody Mary
    (cocktail)"), as a comparison form; empty when none."""


def names_of(name: str, aliases: Iterable[str] = ()) -> Names:
    surfaces = (name, *aliases)
    forms = (comparison_form(n) for n in surfaces)
    acronyms = {a for a in (_written_acronym(n) for n in surfaces) if a}
    found = _QUALIFIER.search(name)
    qualifier = comparison_form(found.group(1)) if found else ""
    return Names(tuple(dict.fromkeys(f for f in forms if len(f) > 1)), frozenset(acronyms), qualifier)


def words(form: str) -> list[str]:
    return form.split()


@lru_cache(maxsize=65536)
def core(form: str) -> str:
    """The form without trailing company suffixes ("acme corp" -> "acme"); never empty."""
    tokens = words(form)
    while len(tokens) > 1 and tokens[-1] in LEGAL_SUFFIXES:
        tokens.pop()
    return " ".join(tokens)


@lru_cache(maxsize=65536)
def acronym(form: str) -> str | None:
    """The initials of a name of several content words ("treaty on the functioning of..." -> "tfeu").

    Two of them must be words of three letters or more: "bc ccf" is two acronyms, not a name an
    acronym abbreviates.
    """
    content = [t for t in words(form) if t not in STOPWORDS]
    if sum(len(t) >= 3 for t in content) < 2:
        return None
    return "".join(t[0] for t in content)


def initials_key(form: str) -> str | None:
    """First letters of all words but the last, then the last ("john smith" and "j smith" -> "j smith")."""
    tokens = words(form)
    if len(tokens) < 2:
        return None
    return " ".join([*(t[0] for t in tokens[:-1]), tokens[-1]])


def blocking_keys(names: Names) -> set[str]:
    """The keys an entity is filed under; two entities are compared when they share one.

    `=form`: the same name (under another label, or as an alias). `w:word`: a word other than a
    stop word, and `d:...`: that word and its one-letter deletions for words of `MIN_TYPO_TOKEN`
    letters or more (two words one edit apart share one). `i:`: initials and surname. `a:`: an
    acronym, of a name of several words or a name written as one.
    """
    keys = {f"a:{a}" for a in names.acronyms}
    for form in names.forms:
        keys |= _form_keys(form)
    return keys


def _form_keys(form: str) -> set[str]:
    keys = {f"={form}"}
    tokens = words(form)
    for token in tokens:
        if token in STOPWORDS or len(token) < 2:
            continue
        keys.add(f"w:{token}")
        if len(token) >= MIN_TYPO_TOKEN and not token.isdigit():
            keys.add(f"d:{token}")
            keys.update(f"d:{token[:i]}{token[i + 1 :]}" for i in range(len(token)))
    ini = initials_key(form)
    if ini is not None:
        keys.add(f"i:{ini}")
    acro = acronym(form)
    if acro is not None:
        keys.add(f"a:{acro}")
    return keys


@lru_cache(maxsize=65536)
def trigrams(form: str) -> frozenset[str]:
    padded = f"  {form} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def trigram_dice(a: str, b: str) -> float:
    """Dice coefficient of the character trigrams of two forms: 1 for equal forms, 0 for nothing shared.

    Padded at the start, so a typo in the first letters costs more than one at the end, as it
    should: names differ at their start more often than spellings of one name do.
    """
    ta, tb = trigrams(a), trigrams(b)
    if not ta or not tb:
        return 0.0
    return 2 * len(ta & tb) / (len(ta) + len(tb))


def rule_match(a: str, b: str) -> str | None:
    """Which name rule, if any, makes two comparison forms one name (a key of `RULE_SCORES`)."""
    if a == b:
        return "same"
    if numbers(a) != numbers(b):
        return None
    if core(a) == core(b):
        return "suffix"
    ta, tb = words(a), words(b)
    if _initials_agree(ta, tb):
        return "initials"
    if _one_typo(ta, tb):
        return "typo"
    return None


def best_match(a: Names, b: Names) -> tuple[float, str]:
    """The highest similarity between any name of one entity and any name of the other, and why:
    a name rule (`RULE_SCORES`), else "chars" with the trigram Dice coefficient, capped at
    `QUALIFIED_SCORE` ("qualifier") when only one name is qualified, 0 when both are, differently.

    Forms whose numbers differ ("Part II" and "Part III", "election, 1960" and "election, 1964")
    score 0: a number in a name picks one of a series, and characters alone rate those pairs
    0.95-0.98, above any spelling variant. So do forms where one is the other with words added
    ("Warren Buffett" and "The Warren Buffett Way", "Alexander Henderson" and "Alexander Henderson
    Jr.") or a word changed for another ("Rise Records" and "Reprise Records"): another word names
    another thing, a misspelling changes letters; company suffixes are the exception, and have
    their rule.
    """
    if a.qualifier != b.qualifier and a.qualifier and b.qualifier:
        return 0.0, "qualifier"
    best, why = 0.0, "chars"
    expanded = {x for f in a.forms if (x := acronym(f)) in b.acronyms}
    expanded |= {x for f in b.forms if (x := acronym(f)) in a.acronyms}
    if expanded:
        long_enough = max(len(x) for x in expanded if x) >= MIN_ACRONYM
        best, why = (RULE_SCORES["acronym"] if long_enough else SHORT_ACRONYM_SCORE), "acronym"
    for fa in a.forms:
        for fb in b.forms:
            rule = rule_match(fa, fb)
            if rule is not None:
                if RULE_SCORES[rule] > best:
                    best, why = RULE_SCORES[rule], rule
            elif numbers(fa) == numbers(fb) and not _other_words(fa, fb):
                dice = trigram_dice(fa, fb)
                if dice > best:
                    best, why = dice, "chars"
    if a.qualifier != b.qualifier and best > QUALIFIED_SCORE:
        return QUALIFIED_SCORE, "qualifier"
    return best, why


def _other_words(a: str, b: str) -> bool:
    """Whether one form is the other with words added, or with a word put in another's place that
    is no misspelling of it ("rise records" and "reprise records", "texas department of..." and
    "us department of..."): a word is a name's part, and a different part names another thing."""
    wa, wb = words(a), words(b)
    ca, cb = Counter(wa), Counter(wb)
    if len(wa) != len(wb):
        return ca <= cb or cb <= ca
    only_a, only_b = ca - cb, cb - ca
    return bool(only_a) and len(wa) > 1 and not any(_one_edit(x, y) for x in only_a for y in only_b)


GENERATIONS = {"sr": "sr", "senior": "sr", "jr": "jr", "junior": "jr"}
"""Father and son: "Joseph P. Kennedy Sr." and "Joseph P. Kennedy Jr." differ as "George I" and
"George II" do, and were merged on characters before these counted as numbers."""


@lru_cache(maxsize=65536)
def numbers(form: str) -> frozenset[str]:
    """The numbers a form holds (and Sr./Jr.), Roman numerals after the first word read as digits
    ("george ii" -> {"2"}).

    A lone letter is a numeral only as the last word ("henry v"): inside a name it is an initial
    ("samuel l jackson"), and first it is a word ("i like it").
    """
    found = set()
    tokens = words(form)
    for n, token in enumerate(tokens):
        if any(c.isdigit() for c in token):  # "1960", "11th", "b52"
            found.add(token)
        elif token in GENERATIONS:
            found.add(GENERATIONS[token])
        elif n > 0 and _ROMAN.fullmatch(token) and (len(token) > 1 or (n == len(tokens) - 1 and token in "ivx")):
            found.add(str(_roman_value(token)))
    return frozenset(found)


def _initials_agree(ta: list[str], tb: list[str]) -> bool:
    """ "j smith" ~ "john smith", "j robert oppenheimer" ~ "robert oppenheimer": the last words
    agree, and every other word either agrees or is the initial of its counterpart (a leading
    initial may stand alone). At least one full word besides the last must remain on each side
    or a surname alone would join every namesake."""
    if len(ta) < 2 or len(tb) < 2 or ta[-1] != tb[-1] or len(ta[-1]) < 2:
        return False
    if len(ta) != len(tb):
        short, long_ = (ta, tb) if len(ta) < len(tb) else (tb, ta)
        extra = long_[: len(long_) - len(short)]
        if len(short) > 3 or len(extra) > 1 or len(extra[0]) != 1 or long_[1:] != short:
            return False  # one initial before a person's name: not "i like it like that", not "u s house of..."
        return any(len(t) > 1 for t in short[:-1])
    abbreviated = False
    for x, y in zip(ta[:-1], tb[:-1], strict=True):
        if x == y:
            continue
        if (len(x) == 1 and y.startswith(x)) or (len(y) == 1 and x.startswith(y)):
            abbreviated = True
            continue
        return False
    return abbreviated


def _one_typo(ta: list[str], tb: list[str]) -> bool:
    """The same words but one, and that one of `MIN_TYPO_TOKEN` letters or more and one edit away
    (a letter added, dropped, changed, or two swapped): "chevroelt colorado" ~ "chevrolet colorado".
    The words that agree are the evidence, so a name of one word gets no typo rule: on 1,942
    HotpotQA passages it merged Ireland and Iceland, Henan and Hunan, Malta and Marta.

    Character trigrams rate such pairs 0.6-0.8, under pairs of different names that share most
    words ("united states" and "united states army" 0.85), so a typo needs its own rule.
    """
    if len(ta) != len(tb) or len(ta) < 2:
        return False  # one word one letter off is as often another name: Ireland and Iceland, Henan and Hunan
    differ = [(x, y) for x, y in zip(ta, tb, strict=True) if x != y]
    if len(differ) != 1:
        return False
    x, y = differ[0]
    long_enough = max(len(x), len(y)) >= MIN_TYPO_TOKEN and x[0] == y[0]  # "cappy" and "dappy" are two names
    return long_enough and not (x.isdigit() or y.isdigit()) and _one_edit(x, y)


def _one_edit(x: str, y: str) -> bool:
    """Damerau-Levenshtein distance exactly 1."""
    if abs(len(x) - len(y)) > 1 or x == y:
        return False
    if len(x) == len(y):
        diff = [i for i in range(len(x)) if x[i] != y[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]]
        )
    short, long_ = (x, y) if len(x) < len(y) else (y, x)
    i = next((i for i in range(len(short)) if short[i] != long_[i]), len(short))
    return short[i:] == long_[i + 1 :]


def _written_acronym(surface: str) -> str | None:
    """ "IBM", "U.S.", "TFEU" -> "ibm", "us", "tfeu"; None for anything not written in capitals."""
    letters = surface.strip().replace(".", "")
    if 2 <= len(letters) <= 8 and letters.isalpha() and letters.isupper():
        return letters.lower()
    return None


_ROMAN = re.compile(r"(?=[ivxl])(l?x{0,3})(ix|iv|v?i{0,3})")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50}


def _roman_value(token: str) -> int:
    total = 0
    for n, ch in enumerate(token):
        value = _ROMAN_VALUES[ch]
        total += -value if n + 1 < len(token) and _ROMAN_VALUES[token[n + 1]] > value else value
    return total
