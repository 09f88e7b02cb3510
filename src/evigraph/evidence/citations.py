"""Check the `[n]` citations of an agent's draft answer against the session's evidence ledger.

An agent's answer is only trustworthy if what it cites exists and says what the sentence
claims. The checks here are literal (no LLM): cheap, deterministic and explainable, so they are
warnings an agent can act on, not a verdict. Rules, and why:

- Markers: `[3]`, `[1, 4]`, `[1-3]`, mixed `[1-3, 7]`, loose spacing. A reversed range or one
  of more than 50 numbers is refused rather than expanded (a typo like `[1-1000]` must not cite
  the whole session); its two end numbers are reported as invalid. Markdown links `[3](url)`,
  link definitions `[3]: url`, footnotes `[^1]` and non-numeric brackets are not markers.
- A number is valid when the ledger holds it now; others are listed in `invalid` and cut from
  the returned answer (a marker left with nothing is removed with its stray space).
- `grounded` is True iff the answer cites at least one valid number and no sentence's citations
  are all invalid: one real citation must not hide a sentence that rests only on numbers that
  point at nothing. The claim checks (`uncited`, `unsupported`) never change it.
- Figures (integers, decimals, thousands separators, percentages, years) must appear as a number
  in the cited content; trailing decimal zeros and the `%` sign do not matter (2.80 == 2.8),
  number words do ("two" never supports 2).
- Names are runs of capitalised words; one is found when each of its words of 3+ letters occurs
  in the cited content as a whole word, ignoring case. The sentence's first word is ambiguous
  (every sentence starts capitalised), so it is checked only when it starts a run or the
  sentence names something else, and never when it is a common opener ("The", "However").
- A sentence saying the graph, the evidence or a lookup lacks something needs no citation and
  is skipped. A negative claim about the world still needs one.
- `uncited` also counts a sentence whose lone capitalised first word is a known name (used
  capitalised mid-sentence elsewhere in the answer or in the session's evidence), so
  "Globex does not provide pensions." is flagged when Globex is something the agent looked up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, Field

from evigraph.evidence.ledger import EvidenceRecord
from evigraph.ingest.sentences import split_sentences

Span = tuple[int, int]

MAX_RANGE = 50  # larger ranges are refused: almost always a typo, never a deliberate citation

_ITEM = r"\d+(?:\s*[-–]\s*\d+)?"
_MARKER = re.compile(rf"\[\s*{_ITEM}(?:\s*,\s*{_ITEM})*\s*\](?!\()")
_PART = re.compile(r"(\d+)(?:\s*[-–]\s*(\d+))?")
# Digits glued to a letter on the left (Q3, A320, COVID-19) are identifiers, not figures.
_FIGURE = re.compile(r"(?<![\w.])(?<![^\W\d_]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!\d)")
_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_WORD_PART = re.compile(r"[^\W\d_]+")
_ENUMERATOR = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)(?:\s+|$)")

# Capitalised only because they start a sentence: never names when sentence-initial.
OPENERS = frozenset(
    """
    A An The This That These Those It Its In On At By For From To With Without Of As Into Over Under
    But And Or Nor So Also Yes No Not Then Thus Hence Therefore However Moreover Furthermore Additionally
    Meanwhile Overall Finally First Second Third Next Last Lastly Here There They Them We He She You I
    His Her Their Our My Your Both Each Every All Any Some Many Most Several Few None Neither Either
    According Based Since Because Although Though While When Whenever Where Whereas What Which Who
    Whom Whose Why How If Unless After Before During Until Instead Otherwise Still Yet Only Just Even
    Indeed Note Notably Sources Source Answer Summary Unfortunately Currently Today Together Other
    Another Such One Two Three Four Five Six Seven Eight Nine Ten Given Despite Per Among Between
    Like Unlike Similarly Likewise Specifically Generally Typically Usually Please Thanks Sure Okay
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_META = (
    r"(?:knowledge[ -]graph|graph|knowledge[ -]base|evidence|sources?|documents?|passages?|excerpts?"
    r"|(?:search|lookup|retrieval|tool)\s+results?|search(?:es)?|look-?ups?|retrieval|context|corpus)"
)
# Only the determiners and qualifiers an answer uses for its own evidence: "the energy sources"
# or "Globex's documents" are about the world, "the retrieved passages" are not.
_SUBJECT = (
    rf"(?:^|\b(?:the|this|that|these|those|my|our|any|your)\s+)"
    rf"(?:(?:retrieved|available|cited|provided|returned|above|current|same|graph|session)\s+)?{_META}"
)
_SAY = (
    r"(?:say|state|mention|contain|include|show|give|provide|specify|describe|cover|list|name|indicate"
    r"|identify|reveal|tell|answer|have|hold|record|explain|confirm|support|discuss|address|report|establish)"
)
_NEG = (
    rf"(?:(?:does|do|did|could|can|would|will)(?:\s+not|n't)\s+(?:\w+ly\s+)?{_SAY}\b|cannot\s+{_SAY}\b"
    r"|(?:has|have|had|holds?|contains?|includes?|mentions?|gives?|shows?|provides?|offers?|returned|found"
    r"|yielded|produced|says?|states?)\s+(?:no|nothing)\b|lacks?\b|(?:is|are|was|were)\s+(?:silent|empty)\b"
    r"|came\s+back\s+empty\b)"
)
_GAP_PATTERNS = [
    # "The graph does not say who founded Globex." / "The lookup for Globex returned nothing."
    re.compile(
        rf"{_SUBJECT}(?:\s+(?:for|on|about|regarding)\s+[^,.;]{{1,60}}?)?(?:\s+(?:I|we)\s+\w+)?"
        rf"(?:\s+(?:itself|also|still|currently|here|so\s+far))*\s+{_NEG}",
        re.IGNORECASE,
    ),
    # "No evidence mentions X." / "None of the sources say ..." / "Nothing in the graph ..."
    re.compile(rf"^(?:no|none\s+of\s+the|nothing\s+in\s+the)\s+(?:\w+\s+)?{_META}\b", re.IGNORECASE),
    re.compile(r"^no\s+(?:information|mention|details|results|matches|hits)\b", re.IGNORECASE),
    re.compile(r"^there\s+(?:is|are|was|were)\s+no\s+(?:information|evidence|mention|details)\b", re.IGNORECASE),
    # a failed lookup in the first person: "I could not find who founded Globex."
    re.compile(
        r"\b(?:I|we)\s+(?:(?:could|can|did|do)(?:\s+not|n't)|cannot|(?:was|were|am|are)\s+unable"
        r"|found\s+(?:no|nothing))\s+(?:to\s+)?(?:find|locate|retrieve|confirm|verify|see|know|have|any)?",
        re.IGNORECASE,
    ),
    # "Globex's founder is not mentioned in the graph."
    re.compile(
        rf"\bnot\s+(?:mentioned|stated|found|covered|listed|described|recorded|present|included|available)"
        rf"\s+(?:in|by|among)\s+(?:the\s+|any\s+)?(?:\w+\s+)?{_META}",
        re.IGNORECASE,
    ),
    # "Who founded Globex is not in the knowledge base.", as cited answers are told to say it
    re.compile(r"\bnot\s+in\s+(?:the|this|any)\s+(?:knowledge[ -](?:base|graph)|graph|evidence)\b", re.IGNORECASE),
]


class CitationPart(NamedTuple):
    """One item of a marker: a single number or a range. `ok` is False for a refused range."""

    text: str
    numbers: tuple[int, ...]
    ok: bool


@dataclass(frozen=True)
class CitationMarker:
    """A `[...]` citation marker: where it is and what it names."""

    span: Span
    parts: tuple[CitationPart, ...]

    @property
    def numbers(self) -> list[int]:
        """Usable numbers, in order, without repeats (refused ranges excluded)."""
        return list(dict.fromkeys(n for p in self.parts if p.ok for n in p.numbers))

    @property
    def refused(self) -> list[int]:
        """End numbers of refused ranges (reversed or longer than MAX_RANGE)."""
        return [n for p in self.parts if not p.ok for n in p.numbers]


def parse_markers(answer: str) -> list[CitationMarker]:
    """Every citation marker of `answer`, in order, with its refused ranges kept apart."""
    markers: list[CitationMarker] = []
    for m in _MARKER.finditer(answer):
        line_start = answer.rfind("\n", 0, m.start()) + 1
        if answer.startswith(":", m.end()) and not answer[line_start : m.start()].strip():
            continue  # a markdown link definition "[3]: https://..."
        parts: list[CitationPart] = []
        for p in _PART.finditer(m.group()):
            first = int(p.group(1))
            if p.group(2) is None:
                parts.append(CitationPart(p.group(), (first,), True))
                continue
            last = int(p.group(2))
            if first <= last and last - first + 1 <= MAX_RANGE:
                parts.append(CitationPart(p.group(), tuple(range(first, last + 1)), True))
            else:
                parts.append(CitationPart(p.group(), (first, last), False))
        markers.append(CitationMarker((m.start(), m.end()), tuple(parts)))
    return markers


def parse_citations(answer: str) -> list[tuple[Span, list[int]]]:
    """(span, numbers) of every citation marker; refused ranges contribute no numbers."""
    return [(m.span, m.numbers) for m in parse_markers(answer)]


class CitationCheck(BaseModel):
    """What `check_citations` found. Only `grounded` is a verdict; the claim lists are warnings."""

    grounded: bool = Field(description="cites at least one valid number and no sentence cites only invalid ones")
    answer: str = Field(description="the answer with invalid numbers removed from its markers")
    cited: list[int] = Field(default_factory=list, description="valid cited numbers, sorted")
    invalid: list[int] = Field(default_factory=list, description="cited numbers that point at nothing")
    sources: list[dict[str, Any]] = Field(default_factory=list, description="n, tool, kind, content per cited n")
    uncited: list[str] = Field(default_factory=list, description="sentences stating a figure or name, no [n]")
    unsupported: list[dict[str, Any]] = Field(
        default_factory=list, description="{sentence, missing}: cited sentences whose evidence lacks figures/names"
    )


@dataclass
class _Name:
    text: str
    words: list[str]
    initial_only: bool  # the sentence-initial word standing alone


class EvidenceLookup(Protocol):
    """What a check reads of a ledger: a live record by number, and all of them (an `EvidenceLedger`,
    or a view of one limited to what a model was shown)."""

    def get(self, n: int) -> EvidenceRecord | None: ...

    def records(self) -> list[EvidenceRecord]: ...


def check_citations(answer: str, ledger: EvidenceLookup) -> CitationCheck:
    """Verify the `[n]` citations of `answer` against `ledger` (see the module docstring)."""
    markers = parse_markers(answer)
    live: dict[int, EvidenceRecord] = {}
    for m in markers:
        for n in m.numbers:
            rec = ledger.get(n)
            if rec is not None:
                live[n] = rec
    invalid = {n for m in markers for n in m.numbers if n not in live} | {n for m in markers for n in m.refused}

    sentences = _sentences(answer, markers)
    known: set[str] | None = None
    grounded = bool(live)
    uncited: list[str] = []
    unsupported: list[dict[str, Any]] = []
    # every marker blanked, including one owned by the sentence before it ("... Acme. [2]")
    blanked = _blank_markers(answer, 0, len(answer), markers)
    for (start, end), own in sentences:
        claim = blanked[start:end]
        claim = _ENUMERATOR.sub(lambda x: " " * len(x.group()), claim)
        if not claim.strip():
            continue
        numbers = [n for m in own for n in m.numbers if n in live]
        if own and not numbers:
            grounded = False
        if is_gap_statement(claim.strip()):
            continue
        figures = _figures(claim)
        names = _names(claim)
        # the first word alone counts only when the sentence names something else too
        checked = names if any(not nm.initial_only for nm in names) else []
        sentence = answer[start:end].strip()
        if not numbers:
            if figures or checked:
                uncited.append(sentence)
            elif names:
                known = known if known is not None else _known_names(blanked, sentences, ledger)
                if all(w in known for w in names[0].words if len(w) >= 3):
                    uncited.append(sentence)
            continue
        evidence = "\n".join(live[n].content for n in dict.fromkeys(numbers))
        have = {key for key, _ in _figures(evidence)}
        missing = [text for key, text in figures if key not in have]
        missing += [nm.text for nm in checked if not _name_found(nm, evidence)]
        if missing:
            unsupported.append({"sentence": sentence, "missing": list(dict.fromkeys(missing))})

    return CitationCheck(
        grounded=grounded,
        answer=_rewrite(answer, markers, set(live)),
        cited=sorted(live),
        invalid=sorted(invalid),
        sources=[{"n": n, "tool": r.tool, "kind": r.kind, "content": r.content} for n, r in sorted(live.items())],
        uncited=uncited,
        unsupported=unsupported,
    )


def _sentences(answer: str, markers: list[CitationMarker]) -> list[tuple[Span, list[CitationMarker]]]:
    """Sentences (lines split first, so list items stand alone) with the markers each owns.

    A marker opening a sentence ("... Acme. [2] Bob ...") belongs to the sentence before it,
    since that is where writers put a trailing citation that follows the full stop.
    """
    spans: list[Span] = []
    offset = 0
    for line in answer.splitlines(keepends=True):
        spans += [(offset + s, offset + e) for s, e in split_sentences(line)]
        offset += len(line)
    owned: list[list[CitationMarker]] = [[] for _ in spans]
    i = 0
    for m in markers:
        while i < len(spans) - 1 and m.span[0] >= spans[i + 1][0]:
            i += 1
        target = i
        if i > 0 and m.span[0] >= spans[i][0]:
            before = _blank_markers(answer, spans[i][0], m.span[0], owned[i - 1])
            if not before.strip():
                target = i - 1
        if spans:
            owned[target].append(m)
    return list(zip(spans, owned, strict=True))


def _blank_markers(answer: str, start: int, end: int, markers: list[CitationMarker]) -> str:
    """answer[start:end] with the given markers blanked out, keeping offsets."""
    chars = list(answer[start:end])
    for m in markers:
        for k in range(max(m.span[0], start), min(m.span[1], end)):
            chars[k - start] = " "
    return "".join(chars)


def is_gap_statement(sentence: str) -> bool:
    """Whether a sentence says the graph, the evidence or a lookup lacks something (needs no [n])."""
    return any(p.search(sentence) for p in _GAP_PATTERNS)


def _figures(text: str) -> list[tuple[str, str]]:
    """(normalised key, text as written) for each figure: 1,200.50 -> 1200.5, 007 -> 7."""
    out: list[tuple[str, str]] = []
    for m in _FIGURE.finditer(text):
        whole = m.group(1).replace(",", "").lstrip("0") or "0"
        frac = (m.group(2) or "").rstrip("0").rstrip(".")
        written = m.group() + ("%" if text.startswith("%", m.end()) else "")
        out.append((whole + frac, written))
    return out


def _names(claim: str) -> list[_Name]:
    """Runs of capitalised words worth checking, after the sentence-initial rules."""
    tokens = list(_WORD.finditer(claim))
    runs: list[list[re.Match[str]]] = []
    for t in tokens:
        if not t.group()[0].isupper():
            continue
        if runs and runs[-1][-1].end() < t.start():
            gap = claim[runs[-1][-1].end() : t.start()]
            if gap.isspace() and "\n" not in gap:
                runs[-1].append(t)
                continue
        runs.append([t])
    first = tokens[0] if tokens and not any(c.isalnum() for c in claim[: tokens[0].start()]) else None
    names: list[_Name] = []
    for run in runs:
        clause_start = run[0] is first or claim[: run[0].start()].rstrip().endswith(":")
        if clause_start and run[0].group() in OPENERS:
            run = run[1:]
        if not run:
            continue
        words = [w for t in run for w in _WORD_PART.findall(t.group())]
        if not any(len(w) >= 3 for w in words):
            continue  # "I", "AI": nothing a literal check could confirm
        text = re.sub(r"['’]s$", "", claim[run[0].start() : run[-1].end()])
        names.append(_Name(text, words, run[0] is first and len(run) == 1))
    return names


def _name_found(name: _Name, evidence: str) -> bool:
    return all(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", evidence, re.IGNORECASE) for w in name.words if len(w) >= 3)


def _known_names(blanked: str, sentences: list[tuple[Span, list[CitationMarker]]], ledger: EvidenceLookup) -> set[str]:
    """Words known to be names: capitalised mid-sentence in the answer or in the session's evidence.

    Structured evidence (entities, relations, status, ontology) starts with names, so every
    capitalised word there counts; in passages only words not opening a sentence do.
    """
    known: set[str] = set()
    for (start, end), _ in sentences:
        for nm in _names(blanked[start:end]):
            if not nm.initial_only:
                known.update(nm.words)
    for rec in ledger.records():
        text = rec.content
        for t in _WORD.finditer(text):
            if not t.group()[0].isupper():
                continue
            prev = text[: t.start()].rstrip()[-1:]
            if rec.kind != "passage" or (prev and prev not in ".!?:\"“'‘"):
                known.update(_WORD_PART.findall(t.group()))
    return known


def _rewrite(answer: str, markers: list[CitationMarker], valid: set[int]) -> str:
    """The answer with invalid numbers cut from markers; empty markers go with their stray space."""
    out: list[str] = []
    pos = 0
    for m in markers:
        out.append(answer[pos : m.span[0]])
        pos = m.span[1]
        kept: list[str] = []
        changed = False
        for p in m.parts:
            good = [n for n in p.numbers if n in valid] if p.ok else []
            if p.ok and len(good) == len(p.numbers):
                kept.append(re.sub(r"\s+", "", p.text))
            else:
                changed = True
                kept += [str(n) for n in good]
        if not changed:
            out.append(answer[m.span[0] : m.span[1]])
        elif kept:
            out.append("[" + ", ".join(dict.fromkeys(kept)) + "]")
        else:
            rest = answer[pos:]
            done = "".join(out)
            if not done or done.endswith("\n"):
                stripped = rest.lstrip(" \t")
                pos += len(rest) - len(stripped)
            elif done[-1] in " \t" and (not rest or rest[0] in " \t\n.,;:!?)"):
                out = [done.rstrip(" \t")]
    out.append(answer[pos:])
    return "".join(out)
