"""What each cited number or evidence id is worth as a citation: one verdict per reference.

A draft's `check_citations` asks whether the answer as a whole rests on the session's evidence;
an agent that cites by evidence id (a decision, a report built outside the draft) needs the
same answer for each id, and a source list needs, for each, where it lives and which document
version it was read from. All of it is read from the session's ledger, which is the only thing
that knows what this session was shown, and whether a passage was shown whole (`read_passages`)
or only as a search snippet: in strict mode only the former is citable, as a snippet proves
nothing about the rest of the passage.

Whether a passage's document version is still current needs the store; the tools add that
(`Cited.supersede`), so this module stays a pure reading of the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from evigraph.evidence.ids import EvidenceId, parse_reference
from evigraph.evidence.items import Source
from evigraph.evidence.ledger import REREAD_HINT, EvidenceLedger, EvidenceRecord

Verdict = Literal["citable", "not_read", "not_passage", "superseded", "unknown", "expired", "malformed"]
"""citable: it may be cited. not_read (strict): a passage seen only as a snippet. not_passage
(strict): an entity, relation or other non-passage item. superseded: its document version was
replaced or deleted. unknown: not evidence of this session. expired: evidence of a session the
server forgot. malformed: neither a number nor an evidence id."""


class Cited(BaseModel):
    """One cited reference, its verdict and, when it is live evidence, what a citation names."""

    ref: str = Field(description="the reference as cited: '[n]' or the evidence id")
    verdict: Verdict
    n: int | None = Field(None, description="its evidence number in this session")
    evidence_id: str | None = None
    kind: str | None = Field(None, description="passage, entity, relation, fact, theme, status or ontology")
    read_in_full: bool = Field(False, description="read whole by read_passages in this session")
    source: Source | None = Field(None, description="where a passage lives")
    version: int | None = Field(None, description="the document version the passage belongs to")
    content_hash: str | None = Field(None, description="content hash of that document version")
    current: bool | None = Field(None, description="whether that version is still its document's current one")
    now_version: int | None = Field(None, description="the document's current version, when this one was replaced")
    line: str = Field("", description="how the item read in replies, without its [n]")
    reason: str | None = Field(None, description="why it is not citable")
    hint: str | None = Field(None, description="what to do so it is")

    @property
    def citable(self) -> bool:
        return self.verdict == "citable"

    def supersede(self, now_version: int | None) -> None:
        """Its document version is no longer current: `now_version` replaced it (None: deleted)."""
        self.current = False
        self.now_version = now_version
        self.verdict = "superseded"
        gone = "was deleted" if now_version is None else f"is now at version {now_version}"
        read = f"version {self.version} of its document" if self.version else "an earlier version of its document"
        self.reason = f"{self.ref} belongs to {read}, which {gone}"
        self.hint = "search again, read the current passage with read_passages and cite that"


def as_reference(ref: int | str) -> int | EvidenceId | None:
    """A cited number or evidence id (`parse_reference`, of no one kind: a bare id is None)."""
    return parse_reference(ref)


def shown_as(ref: int | str) -> str:
    """How a verdict names `ref`: `[n]` for a number however it was written, else the text given."""
    parsed = as_reference(ref)
    return f"[{parsed}]" if isinstance(parsed, int) else str(ref).strip()


def judge(refs: Iterable[int | str], ledger: EvidenceLedger, *, strict: bool = False) -> list[Cited]:
    """One verdict per distinct reference, in the order cited (see `Verdict`)."""
    out: list[Cited] = []
    seen: set[str] = set()
    for ref in refs:
        parsed = as_reference(ref)
        shown = shown_as(ref)
        if shown in seen:
            continue
        seen.add(shown)
        if parsed is None:
            out.append(_malformed(shown))
            continue
        n = parsed if isinstance(parsed, int) else ledger.number_of(parsed)
        rec = ledger.get(n) if n is not None else None
        if rec is None or n is None:
            out.append(_not_live(shown, parsed, ledger))
            continue
        out.append(_judge_record(shown, rec, strict))
    return out


def _judge_record(shown: str, rec: EvidenceRecord, strict: bool) -> Cited:
    cited = Cited(
        ref=shown,
        verdict="citable",
        n=rec.n,
        evidence_id=rec.evidence_id,
        kind=rec.kind,
        read_in_full=rec.read_in_full,
        source=rec.source,
        version=rec.version,
        content_hash=rec.content_hash,
        line=rec.line or " ".join(rec.content.split()),
    )
    if not strict or (rec.kind == "passage" and rec.read_in_full):
        return cited
    if rec.kind == "passage":
        cited.verdict = "not_read"
        cited.reason = f"{shown} was only seen as a search snippet in this session, not read whole"
        cited.hint = f"call read_passages on [{rec.n}] (max_chars above its length) to read it whole, then cite it"
    else:
        cited.verdict = "not_passage"
        cited.reason = f"{shown} is {rec.kind} evidence; in strict mode only passages read whole are citable"
        cited.hint = "cite the passage that states it: find it with search_passages, read it with read_passages"
    return cited


def _malformed(shown: str) -> Cited:
    return Cited(
        ref=shown,
        verdict="malformed",
        reason=f"{shown!r} is neither an evidence number nor an evidence id",
        hint="cite a number [n] a tool returned in this session, or an evidence_id such as 'passage:…'",
    )


def _not_live(shown: str, parsed: int | EvidenceId, ledger: EvidenceLedger) -> Cited:
    if isinstance(parsed, int):
        expired = ledger.forgotten_numbers([parsed])
        if expired is not None:
            return Cited(ref=shown, verdict="expired", n=parsed, reason=expired, hint=REREAD_HINT)
        last = ledger.last
        if parsed <= last:
            reason = f"{shown} is no longer evidence of this session (its reply was cut, or it was evicted)"
            return Cited(ref=shown, verdict="unknown", n=parsed, reason=reason, hint=REREAD_HINT)
        issued = {0: "none yet", 1: "only [1]"}.get(last, f"[1] to [{last}]")
        return Cited(
            ref=shown,
            verdict="unknown",
            n=parsed,
            reason=f"{shown} was never handed out: this session has handed out {issued}",
            hint="cite only numbers a tool returned in this session",
        )
    read = "read it with read_passages" if parsed.kind == "passage" else "find it again with a search"
    return Cited(
        ref=shown,
        verdict="unknown",
        evidence_id=str(parsed),
        kind=parsed.kind,
        reason=f"{shown} is not evidence this session was shown",
        hint=f"{read} in this session, then cite it",
    )
