"""The change journal answers `full` whenever a reader could have missed a change."""

from __future__ import annotations

from evigraph.store.ranking import ChangeJournal


def test_a_reader_behind_the_retained_events_starts_over() -> None:
    journal = ChangeJournal(keep=2)
    token = journal.since(None).token
    journal.documents(["a"])
    journal.documents(["b"])
    assert journal.since(token).documents == ("a", "b")  # both still retained
    journal.documents(["c"])  # "a" is dropped: a reader at `token` would miss it
    assert journal.since(token).full
    latest = journal.since(None).token
    assert not journal.since(latest).full and journal.since(latest).documents == ()
