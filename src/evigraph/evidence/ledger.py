"""The evidence ledger: the numbers a session hands out, so an answer's `[n]` can be verified.

Citations are only worth something if `[n]` points at text a tool really returned in this
session. The ledger remembers, per session, which number was given to which evidence and the
full text a citation is checked against. It is bounded (a long conversation must not grow
memory without limit) and numbers are never reused, so a stale `[n]` can never silently point
at different evidence than the one the agent saw.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError
from evigraph.evidence.ids import KINDS, EvidenceId
from evigraph.evidence.items import (
    EntityItem,
    Item,
    PassageItem,
    PassageText,
    PerKind,
    RelationItem,
    Source,
    ThemeItem,
    property_text,
)

# What a number can point at: the evidence kinds, plus "fact" (a relation returned as a fact);
# checked so a typo cannot create a kind no reader expects.
EVIDENCE_KINDS = frozenset({*KINDS, "fact"})

RECORD_BYTES = 1_300
"""Memory one record takes beyond its id, content and line strings (the model, its field dicts,
the ledger's two entries). Measured with tracemalloc over 2,000 records of real `retrieve`
results: 1,308 B on musique and on 2wikimultihopqa, whose records took 2,095 and 2,014 B in all
(a full ledger: about 4.2 MB)."""

SOURCE_BYTES = 1_100
"""Memory a passage record's `source` takes beyond its strings (the model, its field dict and its
breadcrumbs list): tracemalloc over 2,000 `Source`s with two breadcrumbs gave 1,220 B each, their
unique document keys included. `RECORD_BYTES` was measured before records kept it."""

REREAD_HINT = (
    "run the reads again (retrieve, search_passages, read_passages, ...) to get new numbers for the evidence, "
    "and cite those"
)


@dataclass(frozen=True)
class Forgotten:
    """Why a session's numbers up to `last` point at nothing: the server forgot the session that
    handed them out (`evigraph.serving.sessions`), and its client is now in a new one."""

    last: int
    """The highest number the forgotten session had handed out; the new one numbers after it."""
    idle_s: float
    """How long the session had been idle when it was forgotten."""
    cause: str
    """"idle" (idle past `idle_limit_s`), "memory" (the least recently used, when the sessions
    held more than the server's memory bound) or "closed" (its knowledge base was closed)."""
    idle_limit_s: float = 0.0

    def message(self, numbers: Sequence[int]) -> str:
        cited = ", ".join(f"[{n}]" for n in numbers)
        why = {
            "idle": f"sessions idle for {_duration(self.idle_limit_s)} are forgotten",
            "memory": "it was the least recently used when the sessions outgrew the server's memory bound",
            "closed": "its knowledge base was closed to keep the number open within the server's bound",
        }.get(self.cause, self.cause)
        return (
            f"{cited} {'was' if len(numbers) == 1 else 'were'} evidence of this session before it expired: "
            f"the server forgot it after {_duration(self.idle_s)} idle ({why})"
        )


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{round(minutes / 60, 1):g} h"


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
    source: Source | None = Field(None, description="where a passage lives: what its citation names")
    version: int | None = Field(None, description="the document version a reply of this session read the passage from")
    content_hash: str | None = Field(None, description="content hash of that document version")


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
    """Name, label, description and declared properties: everything an entity card states."""
    parts = (item.name, item.label, item.description, property_text(item.properties).strip())
    return " ".join(part for part in parts if part)


def relation_content(item: RelationItem) -> str:
    """`source type target: fact`, so both end names and the stated fact can support a claim (and
    its declared properties, which it states too)."""
    head = f"{item.source} {item.type} {item.target}"
    return (f"{head}: {item.fact}" if item.fact else head) + property_text(item.properties)


def theme_content(item: ThemeItem) -> str:
    return f"Theme of related entities: {item.members or ', '.join(item.entities)}"


content_of = PerKind(
    "evidence content",
    passage=lambda item: passage_content(item) if item.text.strip() else "",
    entity=entity_content,
    relation=relation_content,
    theme=theme_content,
)
"""The text citations of an item are checked against."""


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

    def __init__(self, capacity: int = 2000, *, forgotten: Forgotten | None = None) -> None:
        """`forgotten`: the session this one replaces was forgotten; numbering goes on after its
        last number, so none of its numbers can point at other evidence, and citing one says why."""
        if capacity < 1:
            raise ConfigurationError(
                f"ledger capacity must be at least 1, got {capacity}", "pass a positive ledger_capacity"
            )
        self.capacity = capacity
        self.forgotten = forgotten
        self._lock = threading.Lock()
        self._records: OrderedDict[int, EvidenceRecord] = OrderedDict()  # oldest first
        self._numbers: dict[str, int] = {}  # evidence_id -> live number
        self._last = forgotten.last if forgotten is not None else 0
        self._bytes = 0
        self._meter: Callable[[int], None] | None = None

    def cite(self, tool: str, items: Sequence[Item], kind: str | None = None) -> None:
        """Number `items` in place; an item with nothing to check a citation against gets 0.

        `kind` overrides the record's kind when one item plays another part (a relation
        returned as a fact stays one piece of evidence, numbered once).
        """
        from evigraph.evidence.render import line_of

        for item in items:
            item.n = 0  # the line is kept without its number: a number can change, the text cannot
            content = content_of(item)
            if not content.strip():
                continue
            source = item.source if isinstance(item, PassageItem) else None
            version, content_hash = (item.version, item.content_hash) if isinstance(item, PassageText) else (None, None)
            item.n = self.record(
                item.ref,
                tool,
                kind or item.KIND,
                content,
                line_of(item),
                source=source,
                version=version,
                content_hash=content_hash,
            )

    def record(
        self,
        evidence_id: EvidenceId | str,
        tool: str,
        kind: str,
        content: str,
        line: str = "",
        *,
        source: Source | None = None,
        version: int | None = None,
        content_hash: str | None = None,
    ) -> int:
        """Number `evidence_id` (reusing its live number if it has one) and return the number.

        A re-recorded item keeps its number but takes the newest `tool`, `kind` and `content`,
        since the latest reply is what the agent has in front of it. Empty content is refused:
        a citation of empty text could never be checked, so it must not get a number. The version
        a passage was read from is kept when a later snippet (which names none) records it again:
        a passage id belongs to one document version, so the snippet shows the same one.
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
            record = EvidenceRecord(
                n=n,
                evidence_id=evidence_id,
                tool=tool,
                kind=kind,
                content=content,
                line=line,
                read_in_full=before is not None and before.read_in_full,
                read_digest=before.read_digest if before is not None else None,
                source=source or (before.source if before is not None else None),
                version=version if version is not None else (before.version if before is not None else None),
                content_hash=content_hash or (before.content_hash if before is not None else None),
            )
            self._records[n] = record
            change = _size(record) - (_size(before) if before is not None else 0)
            self._records.move_to_end(n)
            while len(self._records) > self.capacity:
                _, old = self._records.popitem(last=False)
                del self._numbers[old.evidence_id]
                change -= _size(old)
            self._count(change)
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
                    marked = rec.model_copy(update={"read_in_full": True, "read_digest": digest})
                    self._records[n] = marked
                    self._count(_size(marked) - _size(rec))

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
            change = 0
            for n in numbers:
                rec = self._records.pop(n, None)
                if rec is not None:
                    del self._numbers[rec.evidence_id]
                    change -= _size(rec)
            self._count(change)

    def forgotten_numbers(self, numbers: Iterable[int]) -> str | None:
        """Why these numbers point at nothing, when a forgotten session of this client gave some of
        them; None when none was (never given, dropped, or another session's)."""
        if self.forgotten is None:
            return None
        with self._lock:
            old = sorted({n for n in numbers if 0 < n <= self.forgotten.last and n not in self._records})
        return self.forgotten.message(old) if old else None

    @property
    def last(self) -> int:
        """The highest number handed out (0 before the first)."""
        with self._lock:
            return self._last

    @property
    def bytes(self) -> int:
        """An estimate of the memory the records hold (`RECORD_BYTES` each, plus their strings)."""
        with self._lock:
            return self._bytes

    def meter(self, count: Callable[[int], None] | None) -> int:
        """Report every change of `bytes` to `count` from now on (None: stop); returns `bytes`, so
        an owner summing several ledgers adds it when it starts counting one, subtracts it when it stops."""
        with self._lock:
            self._meter = count
            return self._bytes

    def _count(self, change: int) -> None:
        """With the lock held."""
        self._bytes += change
        if change and self._meter is not None:
            self._meter(change)

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


def _size(record: EvidenceRecord) -> int:
    strings = [record.evidence_id, record.content, record.line, record.read_digest, record.content_hash]
    size = RECORD_BYTES
    if (where := record.source) is not None:
        strings += [where.document_key, where.title, where.path, *where.breadcrumbs]
        size += SOURCE_BYTES
    return size + sum(sys.getsizeof(s) for s in strings if s is not None)
