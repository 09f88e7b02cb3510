"""`EvidenceId`: which piece of evidence an item is, as one typed value instead of string prefixes.

An evidence id names its kind and the stored id (`passage:3f2a…`, `entity:ada lovelace|Person`).
It outlives the session, so decisions store it; `[n]` is the per-session number for the same
item. Written out it is `kind:id`; parsing refuses a kind nobody reads, so a typo fails here
instead of matching nothing later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import Field

EvidenceKind = Literal["passage", "entity", "relation", "theme", "status", "ontology"]
KINDS: tuple[EvidenceKind, ...] = get_args(EvidenceKind)

EvidenceRef = Annotated[
    Annotated[int, Field(ge=1, le=1_000_000_000)] | Annotated[str, Field(min_length=1, max_length=300)],
    Field(description="an evidence number n from this session, or a stable evidence_id such as 'passage:…'"),
]
"""How a caller names evidence in a tool argument: `[n]` or the evidence id, both bounded."""


@dataclass(frozen=True, slots=True)
class EvidenceId:
    """A kind and the id of the stored thing; `str()` gives the wire form `kind:id`."""

    kind: EvidenceKind
    id: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"

    @classmethod
    def parse(cls, text: str) -> EvidenceId | None:
        """The id `text` spells (`kind:id`), or None when it does not start with a known kind."""
        kind, sep, rest = text.partition(":")
        if sep and rest and kind in KINDS:
            return cls(kind, rest)
        return None

    @classmethod
    def of(cls, kind: EvidenceKind, text: str) -> EvidenceId:
        """`text` as an id of `kind`: a bare stored id, or one already written as `kind:id`."""
        parsed = cls.parse(text)
        if parsed is not None and parsed.kind == kind:
            return parsed
        return cls(kind, text)


_BRACKETED = re.compile(r"^\[\s*(\d+)\s*\]$")


def parse_reference(ref: int | str, kind: EvidenceKind | None = None) -> int | EvidenceId | None:
    """A number (`3`, `"3"`, `"[3]"`) or an evidence id (`passage:…`); a bare id (`3f2a…`) is read as
    `kind`'s when the caller takes one kind, else it is None (neither), as is blank text.

    The one reading of a reference, for the tools that take evidence of one kind (read_passages)
    and for the citation checks, which take any kind and so cannot place a bare id."""
    if isinstance(ref, int):
        return ref
    text = ref.strip()
    bracketed = _BRACKETED.match(text)
    if bracketed is not None:
        text = bracketed.group(1)
    if text.isdigit():
        return int(text)
    parsed = EvidenceId.parse(text)
    if parsed is None and kind is not None and text:
        return EvidenceId(kind, text)
    return parsed
