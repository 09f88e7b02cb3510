"""The evidence ledger: stable numbers, bounded memory, and numbers that are never reused."""

from __future__ import annotations

import threading

import pytest

from evigraph.errors import ConfigurationError
from evigraph.evidence.items import EntityItem, PassageItem, RelationItem, Source
from evigraph.evidence.ledger import (
    EvidenceLedger,
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
