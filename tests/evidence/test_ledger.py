"""The evidence ledger: stable numbers, bounded memory, and numbers that are never reused."""

from __future__ import annotations

import threading

import pytest

from evigraph.errors import ConfigurationError
from evigraph.evidence.items import EntityItem, PassageItem, PassageText, RelationItem, Source
from evigraph.evidence.ledger import (
    RECORD_BYTES,
    EvidenceLedger,
    Forgotten,
    entity_content,
    passage_content,
    passage_digest,
    relation_content,
)


def test_numbers_start_at_one_and_increase() -> None:
    ledger = EvidenceLedger()
    assert [ledger.record(f"c{i}", "retrieve", "passage", f"text {i}") for i in range(3)] == [1, 2, 3]
    rec = ledger.get(2)
    assert rec is not None and (rec.evidence_id, rec.tool, rec.kind, rec.content) == (
        "c1",
        "retrieve",
        "passage",
        "text 1",
    )


def test_same_evidence_gets_same_number() -> None:
    ledger = EvidenceLedger()
    first = ledger.record("chunk-a", "retrieve", "passage", "Alice works at Acme.")
    ledger.record("chunk-b", "retrieve", "passage", "Bob works at Globex.")
    again = ledger.record("chunk-a", "retrieve", "passage", "Alice works at Acme.")
    assert again == first == 1
    assert len(ledger) == 2
    assert ledger.record("chunk-c", "retrieve", "passage", "Carol.") == 3  # no number was burnt by the repeat


def test_capacity_eviction_makes_oldest_numbers_invalid() -> None:
    ledger = EvidenceLedger(capacity=2)
    one = ledger.record("a", "retrieve", "passage", "A")
    two = ledger.record("b", "retrieve", "passage", "B")
    three = ledger.record("c", "retrieve", "passage", "C")
    assert one not in ledger and ledger.get(one) is None
    assert two in ledger and three in ledger
    assert len(ledger) == 2


def test_rerecording_refreshes_recency_before_eviction() -> None:
    ledger = EvidenceLedger(capacity=2)
    ledger.record("a", "retrieve", "passage", "A")
    ledger.record("b", "retrieve", "passage", "B")
    ledger.record("a", "retrieve", "passage", "A")  # seen again: now the most recent
    ledger.record("c", "retrieve", "passage", "C")
    assert 1 in ledger and 2 not in ledger


def test_evicted_evidence_recorded_again_gets_a_new_number() -> None:
    ledger = EvidenceLedger(capacity=1)
    assert ledger.record("a", "retrieve", "passage", "A") == 1
    assert ledger.record("b", "retrieve", "passage", "B") == 2
    assert ledger.record("a", "retrieve", "passage", "A") == 3  # 1 is never handed out again
    assert 1 not in ledger


def test_drop_makes_numbers_uncitable_and_never_reuses_them() -> None:
    ledger = EvidenceLedger()
    ledger.record("a", "retrieve", "passage", "A")
    ledger.record("b", "retrieve", "passage", "B")
    ledger.drop([1, 42])  # unknown numbers are ignored
    assert 1 not in ledger and ledger.get(1) is None and 2 in ledger
    assert ledger.number_of("a") is None
    assert ledger.record("a", "retrieve", "passage", "A") == 3


def test_numbering_never_reuses_after_mixed_eviction_and_drop() -> None:
    ledger = EvidenceLedger(capacity=3)
    seen: list[int] = []
    for i in range(10):
        seen.append(ledger.record(f"id{i}", "retrieve", "passage", f"t{i}"))
        if i % 3 == 0:
            ledger.drop([seen[-1]])
    assert seen == list(range(1, 11))


def test_contains_rejects_non_numbers() -> None:
    ledger = EvidenceLedger()
    ledger.record("a", "status", "status", "3 entities")
    assert 1 in ledger
    assert "1" not in ledger and True not in ledger and 0 not in ledger


def test_empty_content_bad_kind_and_bad_capacity_are_refused() -> None:
    ledger = EvidenceLedger()
    with pytest.raises(ValueError, match="empty evidence"):
        ledger.record("a", "retrieve", "passage", "   ")
    with pytest.raises(ValueError, match="unknown evidence kind"):
        ledger.record("a", "retrieve", "chunk", "text")
    assert len(ledger) == 0
    with pytest.raises(ConfigurationError):
        EvidenceLedger(capacity=0)


def test_concurrent_records_get_distinct_numbers() -> None:
    ledger = EvidenceLedger(capacity=10_000)
    results: list[int] = []
    lock = threading.Lock()

    def work(offset: int) -> None:
        got = [ledger.record(f"w{offset}-{i}", "retrieve", "passage", "x") for i in range(200)]
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(1, 801))


def test_content_helpers_leave_out_the_file_path() -> None:
    passage = PassageItem(
        id="c1",
        text="Revenue was 2.8m.",
        source=Source(document_key="d", title="Acme Report", path="reports/2023/x.pdf"),
    )
    assert passage_content(passage) == "Acme Report\nRevenue was 2.8m."
    assert "2023" not in passage_content(passage)
    entity = EntityItem(id="e1", name="Acme Corp", label="Company", description="Maker of anvils")
    assert entity_content(entity) == "Acme Corp Company Maker of anvils"
    rel = RelationItem(
        id="r1", source="Alice", type="WORKS_AT", target="Acme", fact="Alice joined in 2019", confidence=1
    )
    assert relation_content(rel) == "Alice WORKS_AT Acme: Alice joined in 2019"


def test_a_passage_read_whole_keeps_the_digest_of_what_was_shown() -> None:
    """A decision is checked against the text a reply showed whole, not against whatever the
    ledger last recorded for the id: a later snippet of the same passage must not replace it."""
    ledger = EvidenceLedger()
    source = Source(document_key="d", title="Valves")
    whole = PassageItem(id="c1", text="P-100 is SAFE to open at full pressure.", source=source)
    ledger.cite("read_passages", [whole])
    assert ledger.read_digest(whole.ref) is None and not ledger.was_read(whole.ref)
    ledger.mark_read([whole])
    assert ledger.read_digest(whole.ref) == passage_digest(whole) and ledger.was_read(whole.ref)

    snippet = PassageItem(id="c1", text="P-100 is SAFE", source=source, partial=True)
    ledger.cite("search_passages", [snippet])
    assert snippet.n == whole.n and ledger.get(whole.n).content == "Valves\nP-100 is SAFE"  # type: ignore[union-attr]
    assert ledger.read_digest(whole.ref) == passage_digest(whole)
    other = whole.model_copy(update={"text": "P-100 is NOT SAFE to open at full pressure."})
    assert passage_digest(other) != passage_digest(whole)
    with pytest.raises(ConfigurationError, match="cut"):
        passage_digest(snippet)
    ledger.drop([whole.n])
    assert ledger.read_digest(whole.ref) is None


def test_bytes_follow_what_the_ledger_holds_and_the_meter_sees_every_change() -> None:
    """The estimate a server bounds its sessions' memory by: records, re-records, evictions, drops."""
    seen: list[int] = []
    ledger = EvidenceLedger(capacity=3)
    assert ledger.meter(seen.append) == 0
    for i in range(3):
        ledger.record(f"c{i}", "retrieve", "passage", "x" * 1000)
    three = ledger.bytes
    assert 3 * (RECORD_BYTES + 1000) < three < 3 * (RECORD_BYTES + 1300)
    ledger.record("c3", "retrieve", "passage", "y" * 1000)  # evicts c0: the same size again
    assert ledger.bytes == three
    ledger.record("c3", "retrieve", "passage", "short")  # re-recorded with less text
    ledger.drop([2])
    assert 0 < ledger.bytes < three and sum(seen) == ledger.bytes
    assert ledger.meter(None) == ledger.bytes
    ledger.drop([3, 4])
    assert ledger.bytes == 0 and sum(seen) > 0  # no longer reported


def test_a_forgotten_sessions_numbers_are_never_reused_and_say_why() -> None:
    forgotten = Forgotten(last=40, idle_s=3 * 3600, cause="idle", idle_limit_s=2 * 3600)
    ledger = EvidenceLedger(forgotten=forgotten)
    assert ledger.record("c", "retrieve", "passage", "text") == 41
    note = ledger.forgotten_numbers([3, 40, 41, 99])
    assert note == (
        "[3], [40] were evidence of this session before it expired: the server forgot it after 3 h idle "
        "(sessions idle for 2 h are forgotten)"
    )
    assert ledger.forgotten_numbers([41, 99]) is None and EvidenceLedger().forgotten_numbers([1]) is None


def test_a_passage_keeps_the_version_it_was_read_from_when_a_snippet_records_it_again() -> None:
    where = Source(document_key="note", title="Note", path="note.md", start=0, end=40)
    ledger = EvidenceLedger()
    read = PassageText(id="c:2:0", text="The whole passage, as read_passages gave it.", source=where)
    read.version, read.content_hash = 2, "ab" * 32
    ledger.cite("read_passages", [read])
    snippet = PassageItem(id="c:2:0", text="The whole passage", source=where, partial=True)
    ledger.cite("search_passages", [snippet])
    rec = ledger.get(read.n)
    assert rec is not None and snippet.n == read.n
    assert rec.source == where and rec.version == 2 and rec.content_hash == "ab" * 32
    assert ledger.bytes > ledger_without_source_bytes(rec.content)


def ledger_without_source_bytes(content: str) -> int:
    """What the same record costs without where its passage lives: the source is counted too."""
    bare = EvidenceLedger()
    bare.record("passage:c:2:0", "search_passages", "passage", content)
    return bare.bytes
