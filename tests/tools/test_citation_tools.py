"""Citation metadata through the toolkit: what read_passages says of a passage's version, the
verdict per cited number or evidence id of check_citations, render_citations' source list, and
strict mode (only passages read whole are citable)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.tools.conftest import passage_number, run

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.tools.citation_tools import CitationResult, SourceListResult
from evigraph.tools.passage_tools import PassageReadResult
from evigraph.tools.session_tools import SourceStatusResult

FOUNDED = "Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011."


async def test_read_passages_names_the_version_its_hash_and_that_it_is_current(tk: Toolkit) -> None:
    n, _ = await passage_number(tk, "Hawk drone", "The Hawk drone")
    [p] = (await run(tk, "read_passages", {"passages": [n]}, PassageReadResult)).passages
    status = await run(tk, "source_status", {"document_key": p.document_key}, SourceStatusResult)
    assert p.current and p.version == status.version >= 1
    assert p.content_hash == status.content_hash and p.content_hash is not None


async def test_check_citations_gives_a_verdict_per_number_and_id(tk: Toolkit) -> None:
    n, chunk = await passage_number(tk, "Hawk drone", "The Hawk drone")
    check = await run(
        tk,
        "check_citations",
        {"evidence": [n, f"passage:{chunk}", "[9999]", "banana", "passage:no-such-chunk", f"[{n}]"]},
        CitationResult,
    )
    verdicts = {v.ref: v for v in check.verdicts}
    assert list(verdicts) == [f"[{n}]", f"passage:{chunk}", "[9999]", "banana", "passage:no-such-chunk"]
    assert verdicts[f"[{n}]"].verdict == verdicts[f"passage:{chunk}"].verdict == "citable"
    assert verdicts[f"passage:{chunk}"].n == n and verdicts[f"[{n}]"].current is True
    never = verdicts["[9999]"]
    assert never.verdict == "unknown" and "never handed out" in (never.reason or "")
    assert "numbers a tool returned" in (never.hint or "")
    assert verdicts["banana"].verdict == "malformed" and "passage:" in (verdicts["banana"].hint or "")
    unknown = verdicts["passage:no-such-chunk"]
    assert unknown.verdict == "unknown" and "read_passages" in (unknown.hint or "")
    assert not check.grounded and "[9999] unknown" in check.to_llm_text()


async def test_evidence_all_citable_is_grounded_without_a_draft(tk: Toolkit) -> None:
    n, chunk = await passage_number(tk, "Hawk drone", "The Hawk drone")
    check = await run(tk, "check_citations", {"evidence": [n, f"passage:{chunk}"]}, CitationResult)
    assert check.grounded and [v.verdict for v in check.verdicts] == ["citable", "citable"]
    assert check.verdicts[0].evidence_id == check.verdicts[1].evidence_id == f"passage:{chunk}"


async def test_strict_refuses_a_snippet_until_it_is_read_whole(tk: Toolkit) -> None:
    n, _ = await passage_number(tk, "Hawk drone", "The Hawk drone")
    draft = f"The Hawk drone was designed by Lars Berg [{n}]."
    loose = await run(tk, "check_citations", {"answer": draft}, CitationResult)
    assert loose.grounded and loose.verdicts[0].verdict == "citable"

    strict = await run(tk, "check_citations", {"answer": draft, "strict": True}, CitationResult)
    [verdict] = strict.verdicts
    assert verdict.verdict == "not_read" and "search snippet" in (verdict.reason or "")
    assert f"read_passages on [{n}]" in (verdict.hint or "")
    assert not strict.grounded and strict.invalid == [n]
    listed = await run(tk, "render_citations", {"evidence": [n], "strict": True}, SourceListResult)
    assert listed.markdown == "" and listed.hint and f"[{n}] not_read" in listed.hint

    await tk.call("read_passages", {"passages": [n], "max_chars": 40})  # cut: still not read whole
    assert (await run(tk, "check_citations", {"answer": draft, "strict": True}, CitationResult)).invalid == [n]
    await tk.call("read_passages", {"passages": [n]})
    again = await run(tk, "check_citations", {"answer": draft, "strict": True}, CitationResult)
    assert again.grounded and again.verdicts[0].verdict == "citable" and again.verdicts[0].read_in_full


async def test_strict_refuses_evidence_that_is_not_a_passage(tk: Toolkit) -> None:
    found = await tk.call("search_entities", {"query": "Ingrid Halvorsen", "mode": "lexical"})
    entity = found.model_dump()["hits"][0]
    strict = await run(tk, "check_citations", {"evidence": [entity["n"]], "strict": True}, CitationResult)
    [verdict] = strict.verdicts
    assert verdict.verdict == "not_passage" and "read_passages" in (verdict.hint or "")
    loose = await run(tk, "render_citations", {"evidence": [entity["evidence_id"]]}, SourceListResult)
    assert loose.markdown == f"- [{entity['n']}] entity: Ingrid Halvorsen (Person)"


async def test_render_citations_lists_title_path_version_and_location(tk: Toolkit) -> None:
    hawk, _ = await passage_number(tk, "Hawk drone", "The Hawk drone")
    lifter, _ = await passage_number(tk, "Lifter robot pallets", "The Lifter robot")
    [p] = (await run(tk, "read_passages", {"passages": [hawk]}, PassageReadResult)).passages
    draft = f"The Hawk drone counts stock [{hawk}]. The Lifter robot moves pallets [{lifter}, 777]."
    listed = await run(tk, "render_citations", {"answer": draft}, SourceListResult)
    lines = listed.markdown.splitlines()
    assert lines[0] == (
        f"- [{hawk}] Acme Robotics, {p.source.path}, version {p.version}, chars {p.source.start}-{p.source.end}"
    )
    assert lines[1].startswith(f"- [{lifter}] Acme Robotics, ") and f"version {p.version}," in lines[1]
    assert len(lines) == 2 and listed.hint and "[777] unknown" in listed.hint
    assert listed.to_llm_text().startswith(listed.markdown)


async def test_a_call_citing_nothing_is_refused_naming_the_fix(tk: Toolkit) -> None:
    for name in ("check_citations", "render_citations"):
        with pytest.raises(ToolError) as err:
            await tk.call(name, {})
        assert "give the answer" in err.value.message and "evidence" in err.value.message
        with pytest.raises(ToolError):
            await tk.call(name, {"evidence": [0]})


async def test_python_methods_take_the_same_arguments(tk: Toolkit) -> None:
    n, _ = await passage_number(tk, "Hawk drone", "The Hawk drone")
    listed = await tk.render_citations(evidence=[n])
    assert isinstance(listed, SourceListResult) and listed.markdown.startswith(f"- [{n}] Acme Robotics")
    checked = await tk.check_citations(evidence=[n], strict=True)
    assert isinstance(checked, CitationResult) and checked.verdicts[0].verdict == "not_read"


@pytest.fixture
async def writable(tmp_path: Path) -> AsyncIterator[Toolkit]:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        tk = Toolkit(kb)
        await tk.call("ingest", {"text": FOUNDED, "document_key": "note", "title": "Founding note"})
        yield tk


async def test_a_replaced_version_is_superseded_and_marked_in_the_list(writable: Toolkit) -> None:
    tk = writable
    n, _ = await passage_number(tk, "Halvorsen", "founded")
    [p] = (await run(tk, "read_passages", {"passages": [n]}, PassageReadResult)).passages
    assert p.version == 1 and p.current
    await tk.call("ingest", {"text": FOUNDED.replace("2011", "2012"), "document_key": "note", "title": "Founding note"})

    listed = await run(tk, "render_citations", {"evidence": [n]}, SourceListResult)
    assert listed.markdown == f"- [{n}] Founding note, version 1, chars 0-{len(FOUNDED)} (superseded by version 2)"
    [verdict] = listed.verdicts
    assert verdict.verdict == "superseded" and verdict.current is False and verdict.now_version == 2
    assert "search again" in (verdict.hint or "")
    strict = await run(tk, "render_citations", {"evidence": [n], "strict": True}, SourceListResult)
    assert strict.markdown == ""
    check = await run(tk, "check_citations", {"answer": f"It was founded in 2011 [{n}]."}, CitationResult)
    assert not check.grounded and check.invalid == [n] and check.verdicts[0].verdict == "superseded"

    await tk.call("delete_document", {"document_key": "note"})
    [gone] = (await run(tk, "check_citations", {"evidence": [n]}, CitationResult)).verdicts
    assert gone.verdict == "superseded" and gone.now_version is None and "deleted" in (gone.reason or "")


async def test_a_document_is_asked_about_once_per_call(writable: Toolkit, monkeypatch: pytest.MonkeyPatch) -> None:
    tk = writable
    n, chunk = await passage_number(tk, "Halvorsen", "founded")
    await tk.call("ingest", {"text": FOUNDED.replace("2011", "2012"), "document_key": "note", "title": "Founding note"})
    asked: list[str] = []
    status_of = tk.kb.source_status

    async def counted(key: str) -> object:
        asked.append(key)
        return await status_of(key)

    monkeypatch.setattr(tk.kb, "source_status", counted)
    check = await run(tk, "check_citations", {"evidence": [n, f"passage:{chunk}"]}, CitationResult)
    assert [v.verdict for v in check.verdicts] == ["superseded", "superseded"]
    assert asked == ["note"]


async def test_a_reference_reads_the_same_to_every_tool(tk: Toolkit) -> None:
    """One parser: "[n]" and "n" are the number everywhere; a bare id is a passage's where the tool
    takes passages, and malformed in a citation check, which cannot tell its kind."""
    n, chunk = await passage_number(tk, "Hawk drone", "The Hawk drone")
    for ref in (f"[{n}]", str(n), chunk, f"passage:{chunk}"):
        [p] = (await run(tk, "read_passages", {"passages": [ref]}, PassageReadResult)).passages
        assert p.id == chunk, ref
    check = await run(tk, "check_citations", {"evidence": [f"[{n}]", str(n), chunk]}, CitationResult)
    assert [v.verdict for v in check.verdicts] == ["citable", "malformed"]
    assert "passage:" in (check.verdicts[1].hint or "")
