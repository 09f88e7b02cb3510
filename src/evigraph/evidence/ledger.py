"""The evidence ledger: the numbers a session hands out, so an answer's `[n]` can be verified.

Citations are only worth something if `[n]` points at text a tool really returned in this
session. The ledger remembers, per session, which number was given to which evidence and the
full text a citation is checked against. It is bounded (a long conversation must not grow
memory without limit) and numbers are never reused, so a stale `[n]` can never silently point
at different evidence than the one the agent saw.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError
from evigraph.evidence.ids import KINDS, EvidenceId
from evigraph.evidence.items import EntityItem, Item, PassageItem, RelationItem, ThemeItem

# What a number can point at: the evidence kinds, plus "fact" (a relation returned as a fact);
# checked so a typo cannot create a kind no reader expects.
EVIDENCE_KINDS = frozenset({*KINDS, "fact"})


class EvidenceRecord(BaseModel):
    """One numbered piece of evidence, with the text its citations are checked against."""

    n: int = Field(description="evidence number, cited as [n]")
    evidence_id: str = Field(description="stable id: chunk id, entity id, relation id, 'status:<hash>', ...")
    tool: str = Field(description="the tool call that returned it")
    kind: str = Field(description="passage, entity, relation, fact, status or ontology")
    content: str = Field(description="full text a citation is checked against (never the source file path)")
    line: str = Field("", description="how the item reads in replies, without its [n]; empty: use content")
    read_in_full: bool = Field(False, description="a reply of this session showed the whole item (read_passages)")
    read_digest: str | None = Field(
        None, description="`passage_digest` of the item as that reply showed it whole: what a decision checks"
    )


def passage_content(item: PassageItem) -> str:
    """Passage text plus its title: a title often carries the name a sentence cites it for.

    The file path is left out on purpose, so a figure or name that only appears in a path
    (`reports/2023/acme.pdf`) cannot make a claim look supported.
    """
    title = item.source.title.strip()
    return f"{title}\n{item.text}" if title else item.text


def passage_digest(item: PassageItem) -> str:
    """The sha256 of a passage as a reader was shown it whole (`passage_content`: title and text).

    A decision resting on the passage is checked against it (`Traces.record_decision`'s
    `read_digests`): the stored passage must still read exactly so, whatever its id says. A cut
    passage (`partial`) proves nothing about the rest of its text, so it has no digest.
    """
    if item.partial:
        raise ConfigurationError(
            f"{item.ref} was cut to {len(item.text)} characters; its digest would not cover the whole passage",
            hint="read it whole (read_passages with max_chars above its length), then take its digest",
        )
    return hashlib.sha256(passage_content(item).encode("utf-8", "surrogatepass")).hexdigest()


def entity_content(item: EntityItem) -> str:
    """Name, label and description: everything an entity card states."""
    return " ".join(part for part in (item.name, item.label, item.description) if part)


def relation_content(item: RelationItem) -> str:
    """`source type target: fact`, so both end names and the stated fact can support a claim."""
    head = f"{item.source} {item.type} {item.target}"
    return f"{head}: {item.fact}" if item.fact else head


def theme_content(item: ThemeItem) -> str:
    return f"Theme of related entities: {item.members or ', '.join(item.entities)}"


def content_of(item: Item) -> str:
    """The text citations of `item` are checked against."""
    if isinstance(item, PassageItem):
        return passage_content(item) if item.text.strip() else ""
    if isinstance(item, EntityItem):
        return entity_content(item)
    if isinstance(item, RelationItem):
        return relation_content(item)
    if isinstance(item, ThemeItem):
        return theme_content(item)
    raise TypeError(f"no evidence content for {type(item).__name__}")


class EvidenceLedger:
    """Per-session evidence numbering, bounded to `capacity` records.

    Why these rules:
    - The same `evidence_id` recorded again keeps its number (and is refreshed as most recent),
      so retrieving the same passage twice does not inflate numbers or split citations.
    - Numbers start at 1 and only grow. Evicted or dropped numbers are never handed out again:
      an old `[n]` must become invalid, never point at other evidence.
    - Over capacity, the least recently recorded evidence is forgotten first.
    - Several async tool calls may record at once (possibly from worker threads), so every
      operation holds a lock.

    `evidence_id` is the identity, so ids of different kinds must not collide; callers prefix
    them when they could (e.g. "status:<hash>"). A relation returned both as a relation and as a
    fact is one piece of evidence and gets one number.
    """

    def __init__(self, capacity: int = 2000) -> None:
        if capacity < 1:
            raise ConfigurationError(
                f"ledger capacity must be at least 1, got {capacity}", "pass a positive ledger_capacity"
            )
        self.capacity = capacity
        self._lock = threading.Lock()
        self._records: OrderedDict[int, EvidenceRecord] = OrderedDict()  # oldest first
        self._numbers: dict[str, int] = {}  # evidence_id -> live number
        self._last = 0

    def cite(self, tool: str, items: Sequence[Item], kind: str | None = None) -> None:
        """Number `items` in place; an item with nothing to check a citation against gets 0.

        `kind` overrides the record's kind when one item plays another part (a relation
        returned as a fact stays one piece of evidence, numbered once).
        """
        from evigraph.evidence.render import line_of

        for item in items:
            item.n = 0  # the line is kept without its number: a number can change, the text cannot
            content = content_of(item)
            if content.strip():
                item.n = self.record(item.ref, tool, kind or item.KIND, content, line_of(item))

    def record(self, evidence_id: EvidenceId | str, tool: str, kind: str, content: str, line: str = "") -> int:
        """Number `evidence_id` (reusing its live number if it has one) and return the number.

        A re-recorded item keeps its number but takes the newest `tool`, `kind` and `content`,
        since the latest reply is what the agent has in front of it. Empty content is refused:
        a citation of empty text could never be checked, so it must not get a number.
        """
        if kind not in EVIDENCE_KINDS:
            raise ValueError(f"unknown evidence kind {kind!r}; expected one of {sorted(EVIDENCE_KINDS)}")
        if not content.strip():
            raise ValueError(f"evidence {evidence_id!r} has no content; empty evidence gets no number")
        evidence_id = str(evidence_id)
        with self._lock:
            n = self._numbers.get(evidence_id)
            if n is None:
                self._last += 1
                n = self._last
                self._numbers[evidence_id] = n
            before = self._records.get(n)
            self._records[n] = EvidenceRecord(
                n=n,
                evidence_id=evidence_id,
                tool=tool,
                kind=kind,
                content=content,
                line=line,
                read_in_full=before is not None and before.read_in_full,
                read_digest=before.read_digest if before is not None else None,
            )
            self._records.move_to_end(n)
            while len(self._records) > self.capacity:
                _, old = self._records.popitem(last=False)
                del self._numbers[old.evidence_id]
            return n

    def mark_read(self, passages: Iterable[PassageItem]) -> None:
        """Note that a reply showed these numbered passages whole, and the digest of what it showed:
        a decision may rest only on evidence read in full, not on a snippet, and only while the
        stored text is still what was read. The digest is taken from the items themselves, not
        from the record, which a later snippet of the same passage replaces. The mark lives as
        long as the number; a dropped number (its reply was cut) loses it with the rest."""
        marks = [(p.n, str(p.ref), passage_digest(p)) for p in passages]
        with self._lock:
            for n, evidence_id, digest in marks:
                rec = self._records.get(n)
                if rec is not None and rec.evidence_id == evidence_id:
                    self._records[n] = rec.model_copy(update={"read_in_full": True, "read_digest": digest})

    def was_read(self, evidence_id: EvidenceId | str) -> bool:
        """Whether `evidence_id` is live and a reply of this session showed it whole."""
        return self.read_digest(evidence_id) is not None

    def read_digest(self, evidence_id: EvidenceId | str) -> str | None:
        """The `passage_digest` of `evidence_id` as a reply of this session showed it whole; None
        when it is not live or was never read whole."""
        with self._lock:
            n = self._numbers.get(str(evidence_id))
            rec = self._records[n] if n is not None else None
            return rec.read_digest if rec is not None and rec.read_in_full else None

    def get(self, n: int) -> EvidenceRecord | None:
        """The live record numbered `n`, or None when it was never given, evicted or dropped."""
        with self._lock:
            return self._records.get(n)

    def drop(self, numbers: Iterable[int]) -> None:
        """Forget these numbers: evidence cut from (or shortened in) a reply must not be citable.

        Recording the same evidence later gives it a new number, because the old one may still
        sit, now invalid, in a draft.
        """
        with self._lock:
            for n in numbers:
                rec = self._records.pop(n, None)
                if rec is not None:
                    del self._numbers[rec.evidence_id]

    def records(self) -> list[EvidenceRecord]:
        """A snapshot of the live records, oldest first."""
        with self._lock:
            return list(self._records.values())

    def number_of(self, evidence_id: EvidenceId | str) -> int | None:
        """The live number of `evidence_id`, if it has one."""
        with self._lock:
            return self._numbers.get(str(evidence_id))

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __contains__(self, n: object) -> bool:
        """Whether `n` is a live, citable number (bools are not numbers here)."""
        if not isinstance(n, int) or isinstance(n, bool):
            return False
        with self._lock:
            return n in self._records
