"""Citation tools: checking what a draft or an agent cites, and rendering it as a source list.

Both take the same input (a draft's `[n]`, evidence numbers or ids, `strict`) and judge every
reference the same way (`evigraph.evidence.cited`), so a number `check_citations` accepts is one
`render_citations` lists. The list may hold more: without strict it keeps a passage of a replaced
version, marked superseded (it is what the draft quoted), which check_citations refuses. Whether a
cited passage's document version is still current is read here, once per call and document, through
the knowledge base.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import Field

from evigraph.evidence.citations import check_citations as run_check
from evigraph.evidence.citations import parse_markers
from evigraph.evidence.cited import Cited, judge, shown_as
from evigraph.evidence.ids import EvidenceId
from evigraph.evidence.ledger import REREAD_HINT, EvidenceLedger, EvidenceRecord
from evigraph.evidence.pack import Section
from evigraph.evidence.render import source_list
from evigraph.models import SourceState
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.inputs import CitationsInput
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()

REFUSED = frozenset({"not_read", "not_passage", "superseded"})
"""Verdicts on live evidence that make its number invalid in a draft: it points at something, but
not at what may be cited (strict mode's snippets and non-passages, replaced document versions)."""


class _Without:
    """The ledger as a draft check reads it, without the numbers the verdicts refused."""

    def __init__(self, ledger: EvidenceLedger, refused: set[int]) -> None:
        self._ledger, self._refused = ledger, refused

    def get(self, n: int) -> EvidenceRecord | None:
        return None if n in self._refused else self._ledger.get(n)

    def records(self) -> list[EvidenceRecord]:
        return [r for r in self._ledger.records() if r.n not in self._refused]


async def _judged(tk: Toolkit, args: CitationsInput) -> tuple[list[Cited], list[Cited]]:
    """Every reference's verdict (the draft's numbers first, in the order written, then the
    evidence given), and the verdicts of the evidence given."""
    drafted = [n for m in parse_markers(args.answer) for n in m.numbers] if args.answer else []
    verdicts = judge([*drafted, *args.evidence], tk.ledger, strict=args.strict)
    await _check_versions(tk, verdicts)
    by_ref = {v.ref: v for v in verdicts}
    return verdicts, [by_ref[shown_as(ref)] for ref in args.evidence]


async def _check_versions(tk: Toolkit, verdicts: list[Cited]) -> None:
    """Whether each cited passage still belongs to its document's current version: a passage id
    names one version, so one that reads no more was replaced or deleted since it was shown."""
    judged = [v for v in verdicts if v.kind == "passage" and v.n is not None and v.evidence_id is not None]
    if not judged:
        return
    ids = {v.ref: EvidenceId.of("passage", v.evidence_id or "").id for v in judged}
    # Only the versions are wanted, not the text, hence one character of it.
    found = await tk.kb.read_passages(list(dict.fromkeys(ids.values())), max_chars=1)
    live = {p.id: p for p in found.passages}
    now_of: dict[str, int | None] = {}  # one source_status per document, however many of its passages are cited
    for v in judged:
        p = live.get(ids[v.ref])
        if p is not None and p.current and v.version in (None, p.version):
            v.version, v.content_hash, v.current = p.version, v.content_hash or p.content_hash, True
            continue
        now = None
        key = v.source.document_key if v.source is not None else p.document_key if p is not None else None
        if key is not None:
            if key not in now_of:
                status = await tk.kb.source_status(key)
                stored = status.state in (SourceState.current, SourceState.pending)
                now_of[key] = status.version if stored and status.version else None
            now = now_of[key]
        if v.version is None and p is not None:
            v.version = p.version
        v.supersede(now)


class CitationResult(ToolResult):
    grounded: bool
    answer: str = Field("", description="the answer with invalid numbers removed from its markers")
    cited: list[int] = Field(default_factory=list)
    invalid: list[int] = Field(default_factory=list)
    sources: list[dict[str, Any]] = Field(default_factory=list)
    uncited: list[str] = Field(default_factory=list)
    unsupported: list[dict[str, Any]] = Field(default_factory=list)
    verdicts: list[Cited] = Field(
        default_factory=list, description="one per cited number or evidence id: citable, or why not and what to do"
    )

    def header(self) -> str:
        verdict = "grounded" if self.grounded else "NOT grounded"
        return (
            f"{verdict}; cited {self.cited or 'nothing valid'}"
            + (f"; invalid {self.invalid}" if self.invalid else "")
            + f"; verdicts: {_tally(self.verdicts)}"
        )

    def sections(self) -> list[Section]:
        return [
            Section("Not citable", [_refusal(v) for v in self.verdicts if not v.citable]),
            Section("Uncited claims (add [n] or drop them)", list(self.uncited)),
            Section(
                "Unsupported (the cited evidence lacks these)",
                [f"{u['sentence']} -- missing: {', '.join(u['missing'])}" for u in self.unsupported],
            ),
            Section("Answer with invalid numbers removed", [self.answer] if self.invalid else []),
        ]


def _tally(verdicts: list[Cited]) -> str:
    return ", ".join(f"{count} {name}" for name, count in Counter(v.verdict for v in verdicts).items()) or "none"


def _refusal(v: Cited) -> str:
    return f"{v.ref} {v.verdict}: {v.reason}" + (f"; {v.hint}" if v.hint else "")


@TOOLS.tool(
    "check_citations",
    CitationsInput,
    "Check a draft answer before replying: every [n] ([3], [1, 4], [1-3]) must be evidence returned in this "
    "session. Returns grounded, the valid and invalid numbers (invalid ones removed from the answer), the "
    "cited evidence, sentences stating a figure or name without their own [n], and cited sentences whose "
    "figures or names the cited evidence lacks. A sentence saying the graph lacks something needs no [n]. "
    "Evidence numbers or ids cited outside a draft (evidence) get a verdict each too. strict: only passages "
    "read whole with read_passages are citable, not search snippets.",
)
async def check_citations(tk: Toolkit, args: CitationsInput) -> CitationResult:
    verdicts, given = await _judged(tk, args)
    refused = {v.n for v in verdicts if v.verdict in REFUSED and v.n is not None}
    if args.answer is not None:
        check = run_check(args.answer, _Without(tk.ledger, refused))
        result = CitationResult(**check.model_dump(), verdicts=verdicts)
        result.grounded = check.grounded and all(v.citable for v in given)
    else:
        result = CitationResult(grounded=all(v.citable for v in given), verdicts=verdicts)
    expired = tk.ledger.forgotten_numbers([*result.invalid, *(v.n for v in given if v.verdict == "expired" and v.n)])
    if expired is not None:
        result.hint = f"{expired}: {REREAD_HINT}"
    elif any(v.verdict in REFUSED for v in verdicts):
        result.hint = "some citations are not citable as they stand: each verdict says what to do"
    elif not result.grounded:
        result.hint = "cite evidence numbers returned in this session, or say what the knowledge base does not hold"
    return result


class SourceListResult(ToolResult):
    markdown: str = Field(description="the source list: one '- [n] title, path, version, location' line each")
    verdicts: list[Cited] = Field(default_factory=list, description="one per cited number or evidence id")

    def header(self) -> str:
        return self.markdown or "no source to list"

    def sections(self) -> list[Section]:
        return [Section("Not citable", [_refusal(v) for v in self.verdicts if not v.citable])]


def _listed(v: Cited, *, strict: bool) -> bool:
    """Whether a verdict's evidence goes in the source list: anything citable, and without strict a
    passage of a replaced version too, marked as superseded (it is what the draft quoted)."""
    return v.citable or (not strict and v.verdict == "superseded")


@TOOLS.tool(
    "render_citations",
    CitationsInput,
    "A markdown source list for what an answer cites: give the draft (its [n]) or evidence numbers or ids. "
    "One line per source: [n], the document's title and path, the version read (marked when superseded) and "
    "the location. References that are not citable are left out with a verdict saying why. strict: list only "
    "passages read whole with read_passages.",
)
async def render_citations(tk: Toolkit, args: CitationsInput) -> SourceListResult:
    verdicts, _ = await _judged(tk, args)
    listed = [v for v in verdicts if _listed(v, strict=args.strict)]
    left_out = [v for v in verdicts if not _listed(v, strict=args.strict)]
    result = SourceListResult(markdown=source_list(listed), verdicts=verdicts)
    if left_out:
        result.hint = f"{len(left_out)} reference(s) left out of the list: " + "; ".join(
            f"{v.ref} {v.verdict}" for v in left_out
        )
    return result
