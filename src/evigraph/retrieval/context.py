"""Packing a retrieval result into a token budget an LLM can take.

Sections share the budget: each first gets its share (passages the largest), then what a
section left unused goes to the others in order. So a long list of relations cannot push the
passages out, and a short one does not waste its share. A section that does not fit whole ends
with `…(N more omitted)`, and the total never exceeds the budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evigraph.errors import ConfigurationError
from evigraph.providers.tokenizers import Tokenizer, default_tokenizer
from evigraph.retrieval.result import PassageItem, RelationItem, RetrievalResult

SHARES = {"Passages": 0.55, "Entities": 0.15, "Relations": 0.15, "Facts": 0.15}
MAX_PASSAGE_SHARE = 0.5  # one passage may take at most this part of its section's share


@dataclass
class _Section:
    title: str
    lines: list[str]
    kept: list[str] = field(default_factory=list)
    used: int = 0


def pack_context(result: RetrievalResult, max_tokens: int, tokenizer: Tokenizer | None = None) -> str:
    if max_tokens <= 0:
        raise ConfigurationError(f"max_tokens must be positive, not {max_tokens}", hint="e.g. max_tokens=2000")
    tok = tokenizer or default_tokenizer()
    sections = [
        _Section("Passages", [_passage_line(p) for p in result.passages]),
        _Section(
            "Entities",
            [
                f"[{e.n}] {e.name} ({e.label})" + (f": {e.description}" if e.description else "")
                for e in result.entities
            ],
        ),
        _Section("Relations", [_relation_line(r) for r in result.relations]),
        _Section("Facts", [f"[{f.n}] {f.fact}" for f in result.facts]),
    ]
    sections = [s for s in sections if s.lines]
    if not sections:
        return _fit(tok, "No evidence found.", max_tokens)
    total_share = sum(SHARES[s.title] for s in sections)
    # What every section costs at least: its header and its omission line, so each one shows.
    fixed = {s.title: tok.count(f"## {s.title}\n") + tok.count(_omitted(len(s.lines)) + "\n") for s in sections}
    spare = max_tokens - sum(fixed.values())
    if spare < 0:
        return _fit(tok, "\n".join(f"## {s.title}\n{_omitted(len(s.lines))}" for s in sections), max_tokens)

    budgets = {s.title: int(spare * SHARES[s.title] / total_share) for s in sections}
    for s in sections:  # first pass: each within its own share
        _fill(tok, s, budgets[s.title], trim_to=int(budgets[s.title] * MAX_PASSAGE_SHARE))
    leftover = spare - sum(s.used for s in sections)
    for s in sections:  # second pass: unused shares, in section order
        before = s.used
        _fill(tok, s, s.used + leftover, trim_to=0)
        leftover -= s.used - before

    out = []
    for s in sections:
        out.append(f"## {s.title}")
        out.extend(s.kept)
        if len(s.kept) < len(s.lines):
            out.append(_omitted(len(s.lines) - len(s.kept)))
    text = "\n".join(out)
    return _fit(tok, text, max_tokens)


def _fill(tok: Tokenizer, s: _Section, budget: int, trim_to: int) -> None:
    """Add the section's next lines while they fit; trim a too-long first line to `trim_to` tokens."""
    while len(s.kept) < len(s.lines):
        line = s.lines[len(s.kept)]
        cost = tok.count(line + "\n")
        if s.used + cost > budget:
            if trim_to and not s.kept and budget - s.used > 8:
                line = _trim(tok, line, min(trim_to, budget - s.used))
                cost = tok.count(line + "\n")
                if s.used + cost <= budget:
                    s.kept.append(line)
                    s.used += cost
            return
        s.kept.append(line)
        s.used += cost


def _trim(tok: Tokenizer, line: str, tokens: int) -> str:
    """Cut a line to about `tokens` tokens at a word boundary, marking the cut."""
    words = line.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:  # longest prefix of words that fits
        mid = (lo + hi + 1) // 2
        if tok.count(" ".join(words[:mid]) + " …\n") <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " …"


def _fit(tok: Tokenizer, text: str, max_tokens: int) -> str:
    """Last guard: cut from the end until the text is within the budget."""
    if tok.count(text) <= max_tokens:
        return text
    lines = text.split("\n")
    while lines and tok.count("\n".join(lines)) > max_tokens:
        lines.pop()
    return "\n".join(lines)


def _omitted(n: int) -> str:
    return f"…({n} more omitted)"


def _passage_line(p: PassageItem) -> str:
    where = p.source.title or p.source.document
    if p.source.page is not None:
        where += f", p. {p.source.page}"
    crumbs = list(p.source.breadcrumbs)
    if crumbs and crumbs[0] == p.source.title:
        crumbs = crumbs[1:]  # the document title is usually its top heading
    if crumbs:
        where += " > " + " > ".join(crumbs)
    return f"[{p.n}] ({where}) " + " ".join(p.text.split())


def _relation_line(r: RelationItem) -> str:
    return f"[{r.n}] {r.source} -[{r.type}]-> {r.target}: {' '.join(r.fact.split())}"
