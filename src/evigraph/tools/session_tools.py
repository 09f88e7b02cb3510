"""Tools over the session and sources: re-packing evidence, source status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from evigraph.evidence.ledger import REREAD_HINT
from evigraph.evidence.pack import Section, pack_sections
from evigraph.evidence.render import numbers_shown
from evigraph.models import SourceState
from evigraph.providers.tokenizers import default_tokenizer
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.inputs import GetContextInput, SourceStatusInput
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()
_SECTION_OF = {
    "passage": "Passages",
    "entity": "Entities",
    "relation": "Relations",
    "fact": "Relations",
    "theme": "Themes",
    "status": "Knowledge base",
    "ontology": "Knowledge base",
}
_SHARE = {"Passages": 2.0}


class ContextResult(ToolResult):
    context: str = Field(description="the evidence packed into the token budget, every item as [n]")
    included: list[int] = Field(default_factory=list, description="numbers whose evidence is in the context")
    omitted: list[int] = Field(default_factory=list, description="live numbers left out to stay within max_tokens")
    missing: list[int] = Field(default_factory=list, description="numbers that are not live evidence")

    def header(self) -> str:
        return self.context


@TOOLS.tool(
    "get_context",
    GetContextInput,
    "Re-pack chosen evidence numbers from this session into one text within max_tokens, passages given "
    "twice the share of other kinds, every item prefixed [n]. Use it to hand a sub-agent or a final prompt "
    "exactly the evidence an answer rests on.",
)
async def get_context(tk: Toolkit, args: GetContextInput) -> ContextResult:
    sections: dict[str, Section] = {}
    live, missing = [], []
    for n in dict.fromkeys(args.evidence):
        rec = tk.ledger.get(n)
        if rec is None:
            missing.append(n)
            continue
        title = _SECTION_OF.get(rec.kind, "Other")
        section = sections.setdefault(title, Section(title, [], _SHARE.get(title, 1.0)))
        section.lines.append(f"[{n}] " + (rec.line or " ".join(rec.content.split())))
        live.append(n)
    tok = default_tokenizer()
    text = pack_sections(list(sections.values()), args.max_tokens, tok.count)
    shown = set(numbers_shown(text))  # what the budget cut is not in the context
    included = [n for n in live if n in shown]
    omitted = [n for n in live if n not in shown]
    result = ContextResult(context=text, included=included, omitted=omitted, missing=missing)
    hints = []
    expired = tk.ledger.forgotten_numbers(missing)
    if expired is not None:
        hints.append(f"{expired}; they were skipped: {REREAD_HINT}")
    elif missing:
        hints.append("some numbers are not evidence of this session (never given, or dropped); they were skipped")
    if omitted:
        hints.append(f"{len(omitted)} item(s) did not fit in max_tokens: raise it or pick fewer numbers")
    result.hint = "; ".join(hints) or None
    return result


class SourceStatusResult(ToolResult):
    document_key: str
    state: SourceState
    content_hash: str | None = None
    version: int = 0
    error: str | None = None
    at: str | None = None

    def header(self) -> str:
        parts: dict[str, Any] = {"state": self.state.value, "version": self.version, "content_hash": self.content_hash}
        text = f"{self.document_key}: " + ", ".join(f"{k} {v}" for k, v in parts.items() if v not in (None, 0))
        return text + (f"; {self.error}" if self.error else "")


@TOOLS.tool(
    "source_status",
    SourceStatusInput,
    "Whether a document is current (stored version complete), pending (being ingested now), failed (its "
    "last ingest failed), deleted, or unknown here, with its content hash and version.",
)
async def source_status(tk: Toolkit, args: SourceStatusInput) -> SourceStatusResult:
    record = await tk.kb.source_status(args.document_key)
    result = SourceStatusResult(document_key=args.document_key, **record.model_dump(exclude={"key"}))
    if result.state == SourceState.unknown:
        result.hint = "keys of files are 'file:' + their root folder's name + the path under it (e.g. 'file:docs/a.md')"
    return result
