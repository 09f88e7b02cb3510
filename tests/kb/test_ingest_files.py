"""`KnowledgeBase.ingest_files`: named files, each with its own plan, under the one key rule."""

from __future__ import annotations

from pathlib import Path

from evigraph.kb import KnowledgeBase
from evigraph.kb.writes import FilePlan
from evigraph.models import IngestStatus, SourceState

PROSE = " ".join(f"Sentence {i} says Dr. Ada Lund met Nordvik Corp in Bergen." for i in range(40))


async def test_each_file_takes_its_plan_and_keys_match_the_command_lines(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(PROSE, encoding="utf-8")
    (docs / "b.txt").write_text(PROSE, encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest_files(
            [str(docs / "a.txt"), str(docs / "b.txt"), str(docs / "missing.txt")],
            plans={str(docs / "a.txt"): FilePlan(chunker="fixed"), str(docs / "b.txt"): FilePlan(chunker="sentence")},
            progress=False,
        )
        by_key = {d.key: d for d in report.documents}
        a, b, missing = (f"file:{docs.resolve().name}/{n}" for n in ("a.txt", "b.txt", "missing.txt"))
        assert (by_key[a].status, by_key[b].status) == (IngestStatus.created, IngestStatus.created)
        assert by_key[a].chunks != by_key[b].chunks  # fixed windows and sentence caps cut the same text apart
        assert by_key[missing].status == IngestStatus.failed and "no such file" in (by_key[missing].error or "")
        assert (await kb.source_status(missing)).state == SourceState.failed  # logged by the knowledge base
        again = await kb.ingest([docs], progress=False)  # the command line's walk finds the same documents
        assert {d.key: d.status for d in again.documents} == {a: IngestStatus.unchanged, b: IngestStatus.unchanged}
        assert (await kb.status()).documents == 2
