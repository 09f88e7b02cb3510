"""Packing evidence into a budget an LLM can take: tokens for `to_context`, characters for tools.

Sections share the budget: each first gets its share (passages the largest), then what a
section left unused goes to the others in order. So a long list of relations cannot push the
passages out, and a short one does not waste its share. A section that does not fit whole ends
with `…(N more omitted)`, and the total never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

MAX_PASSAGE_SHARE = 0.5  # one passage may take at most this part of its section's share


@dataclass
class Section:
    """A titled list of lines that gets `share` of the budget relative to the other sections."""

    title: str
    lines: list[str]
    share: float = 1.0
    line_cap: int = 0
    """Longest line kept whole (0: the packer's default); longer lines are cut at a word."""
    first: bool = False
    """Filled before the other sections get any budget, and while it is cut they are not shown:
    passages are what an answer quotes, the rest only adds to them."""
    kept: list[str] = field(default_factory=list)
    used: int = 0


Measure = Callable[[str], int]


def pack_sections(
    sections: Sequence[Section],
    budget: int,
    measure: Measure,
    *,
    header: str = "",
    line_share: float = MAX_PASSAGE_SHARE,
    line_cap: int = 0,
) -> str:
    """Pack titled sections into `budget` (as counted by `measure`: tokens, or `len` for characters).

    Each section first fills its own share, then unused shares go to the others in order; a
    section that does not fit whole ends with `…(N more omitted)`. A first line too long for its
    section is trimmed to `line_share` of the section's budget; a section's `line_cap`, else
    `line_cap`, trims every line to at most that much.
    """
    sections = [s for s in sections if s.lines]
    for s in sections:
        cap = s.line_cap or line_cap
        if cap:
            s.lines = [_trim(measure, line, cap) if measure(line) > cap else line for line in s.lines]
    firsts = [s for s in sections if s.first]
    if firsts:
        return _pack_first(firsts, [s for s in sections if not s.first], budget, measure, header, line_share)
    head = f"{header}\n" if header else ""
    if not sections:
        return _fit(measure, header or "No evidence found.", budget)
    total_share = sum(s.share for s in sections)
    spare = budget - _least(measure, sections) - measure(head)
    if spare < 0:
        return _fit(measure, _bare(head, sections), budget)

    budgets = {s.title: int(spare * s.share / total_share) for s in sections}
    for s in sections:  # first pass: each within its own share
        _fill(measure, s, budgets[s.title], trim_to=int(budgets[s.title] * line_share))
    leftover = spare - sum(s.used for s in sections)
    for s in sections:  # second pass: unused shares, in section order
        before = s.used
        _fill(measure, s, s.used + leftover, trim_to=0)
        leftover -= s.used - before
    return _fit(measure, _render(header, sections), budget)


def _pack_first(
    firsts: Sequence[Section],
    rest: Sequence[Section],
    budget: int,
    measure: Measure,
    header: str,
    line_share: float,
) -> str:
    """The `first` sections take the budget they need; the others share what is left, if they all fit."""
    head = f"{header}\n" if header else ""
    spare = budget - _least(measure, firsts) - measure(head)
    if spare < 0:
        return _fit(measure, _bare(head, firsts), budget)
    for s in firsts:
        _fill(measure, s, spare, trim_to=spare)
        spare -= s.used
    done = _render(header, firsts)
    if not rest or any(len(s.kept) < len(s.lines) for s in firsts):
        return _fit(measure, done, budget)
    return pack_sections(rest, budget, measure, header=done, line_share=line_share)


def _least(measure: Measure, sections: Sequence[Section]) -> int:
    """What the sections cost at least: each one's heading and omission line, so each one shows."""
    return sum(measure(f"## {s.title}\n") + measure(_omitted(len(s.lines)) + "\n") for s in sections)


def _bare(head: str, sections: Sequence[Section]) -> str:
    """The sections with no line kept: what is left when even their headings barely fit."""
    return head + "\n".join(f"## {s.title}\n{_omitted(len(s.lines))}" for s in sections)


def _render(header: str, sections: Sequence[Section]) -> str:
    out = [header] if header else []
    for s in sections:
        out.append(f"## {s.title}")
        out.extend(s.kept)
        if len(s.kept) < len(s.lines):
            out.append(_omitted(len(s.lines) - len(s.kept)))
    return "\n".join(out)


def _fill(measure: Measure, s: Section, budget: int, trim_to: int) -> None:
    """Add the section's next lines while they fit; trim a too-long first line to `trim_to`."""
    while len(s.kept) < len(s.lines):
        line = s.lines[len(s.kept)]
        cost = measure(line + "\n")
        if s.used + cost > budget:
            if trim_to and not s.kept and budget - s.used > 8:
                line = _trim(measure, line, min(trim_to, budget - s.used))
                cost = measure(line + "\n")
                if s.used + cost <= budget:
                    s.kept.append(line)
                    s.used += cost
            return
        s.kept.append(line)
        s.used += cost


def _trim(measure: Measure, line: str, size: int) -> str:
    """Cut a line to about `size` at a word boundary, marking the cut."""
    words = line.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:  # longest prefix of words that fits
        mid = (lo + hi + 1) // 2
        if measure(" ".join(words[:mid]) + " …\n") <= size:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " …"


def _fit(measure: Measure, text: str, budget: int) -> str:
    """Last guard: cut whole lines from the end until the text is within the budget; a first line
    longer than the whole budget (a header naming eighty types) is cut itself, so the reader still
    gets the start of the answer rather than nothing."""
    if measure(text) <= budget:
        return text
    lines = text.split("\n")
    kept = list(lines)
    while kept and measure("\n".join(kept)) > budget:
        kept.pop()
    return "\n".join(kept) if kept else _cut(measure, lines[0], budget)


def _cut(measure: Measure, line: str, budget: int) -> str:
    """The longest start of `line` within `budget`, marked as cut: at a word boundary when a
    word fits, else mid-word; "" only when not even one character does."""
    at_word = _trim(measure, line, budget)
    if measure(at_word) <= budget:
        return at_word
    for mark in (" …", ""):
        lo, hi = 0, len(line)
        while lo < hi:  # longest prefix that fits with the mark
            mid = (lo + hi + 1) // 2
            if measure(line[:mid] + mark) <= budget:
                lo = mid
            else:
                hi = mid - 1
        if lo:
            return line[:lo] + mark
    return ""


def _omitted(n: int) -> str:
    return f"…({n} more omitted)"
