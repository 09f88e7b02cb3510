"""The Python API: KnowledgeBase, user-written strategies, plain-function mirrors, crash safety."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.conftest import engine_connection

import evigraph
import evigraph.sync
from evigraph import (
    ExtractedEntity,
    ExtractionStrategy,
    GraphData,
    IngestStatus,
    KnowledgeBase,
    KnowledgeBaseMissingError,
    LoadedDocument,
    LoaderStrategy,
    Mention,
    NotFoundError,
    Ontology,
    Span,
    TextChunk,
)
from evigraph.ingest.chunking import ChunkingStrategy
from evigraph.models import EntityType


async def test_text_ingest_status_delete(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest(text="Dr. Jane Smith joined Acme Corp in Berlin in 2019.", key="note-1")
        assert [d.status for d in report.documents] == [IngestStatus.created]
        status = await kb.status()
        assert (status.documents, status.passages) == (1, 1)
        assert status.entities >= 2
        again = await kb.ingest(text="Dr. Jane Smith joined Acme Corp in Berlin in 2019.", key="note-1")
        assert again.documents[0].status == IngestStatus.unchanged
        assert await kb.delete("note-1") is True
        with pytest.raises(NotFoundError, match="no document with key 'note-1'") as gone:
            await kb.delete("note-1")  # a mistyped or already deleted key says so
        assert "status --documents" in gone.value.hint
        assert await kb.delete_document("note-1", missing_ok=True) is False
        empty = await kb.status()
        assert (empty.documents, empty.passages, empty.entities, empty.relations) == (0, 0, 0, 0)


async def test_context_manager_closes_the_database(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text="Lisbon and Porto are cities in Portugal.", key="a")
    # A closed knowledge base releases the file: another process can write to it.
    proc = subprocess.run(
        [sys.executable, "-m", "evigraph", "ingest", "--db", str(db), "--json", str(_write(tmp_path / "b.txt"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def _write(path: Path, text: str = "Madrid is in Spain. Seville is in Spain too.") -> Path:
    path.write_text(text, encoding="utf-8")
    return path


async def test_read_of_missing_knowledge_base_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    async with KnowledgeBase(db) as kb:
        with pytest.raises(KnowledgeBaseMissingError, match="no knowledge base"):
            await kb.status()
    assert not db.exists()


async def test_replacing_a_document_keeps_shared_entities_and_relations(tmp_path: Path) -> None:
    fact = "Ana Costa works with Marta Oliveira in Lisbon."
    async with KnowledgeBase(tmp_path / "kb.db", extractor="spacy") as kb:
        await kb.ingest(text=f"{fact} Tomas Reyes visited Porto.", key="a")
        await kb.ingest(text=f"{fact} The lab is small.", key="b")
        assert kb.store is not None
        rel = await kb.store.cypher_query(
            "MATCH (a:Entity {name: 'Marta Oliveira'})-[r:RELATES]->(b:Entity {name: 'Lisbon'}) "
            "RETURN size(string_split(r.source_chunks, ' ')) AS n"
        )
        assert rel == [{"n": 2}]
        report = await kb.ingest(text="Nothing about people here at all.", key="a")
        assert report.documents[0].status == IngestStatus.updated
        names = {r["n"] for r in await kb.store.cypher_query("MATCH (e:Entity) RETURN e.name AS n")}
        assert {"Marta Oliveira", "Lisbon"} <= names  # still mentioned by b
        assert "Tomas Reyes" not in names and "Porto" not in names  # only a mentioned them
        rel = await kb.store.cypher_query(
            "MATCH (a:Entity {name: 'Marta Oliveira'})-[r:RELATES]->(b:Entity {name: 'Lisbon'}) "
            "RETURN size(string_split(r.source_chunks, ' ')) AS n"
        )
        assert rel == [{"n": 1}]  # the relation lost a's passage as a source, kept b's
        chunks = await kb.store.cypher_query("MATCH (c:Chunk) RETURN c.text AS t")
        assert not any("Tomas" in r["t"] for r in chunks)


async def test_read_only_queries_cannot_write(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        await kb.ingest(text="Lisbon is in Portugal.", key="a")
        assert kb.store is not None
        with pytest.raises(evigraph.StoreError, match="read-only"):
            await kb.store.cypher_query("MATCH (d:Document) SET d.title = 'hacked'")
        assert (await kb.store.cypher_query("MATCH (d:Document) RETURN d.title AS t")) == [{"t": "a"}]


class HtmlLoader(LoaderStrategy):
    name = "html"
    extensions = (".html",)

    def load(self, path: Path, key: str) -> list[LoadedDocument]:
        text = re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))
        return [LoadedDocument(key=key, title=path.stem, path=str(path), text=" ".join(text.split()), loader=self.name)]


class LineChunking(ChunkingStrategy):
    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        out, pos = [], 0
        for line in document.text.split(". "):
            start = document.text.index(line, pos)
            pos = start + len(line)
            out.append(TextChunk(index=len(out), text=line, start=start, end=pos))
        return out


class GadgetExtraction(ExtractionStrategy):
    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        ents, mentions = [], []
        for c in chunks:
            for m in re.finditer(r"Gadget \d+", c.text):
                e = ExtractedEntity.create(m.group(), "Product")
                ents.append(e)
                mentions.append(
                    Mention(entity_id=e.id, chunk_index=c.index, spans=(Span(start=m.start(), end=m.end()),))
                )
        return GraphData(entities=tuple(ents), mentions=tuple(mentions))


async def test_user_written_strategies_are_accepted(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<p>Gadget 7 is new. Gadget 9 is old. Nothing else</p>", encoding="utf-8")
    ontology = Ontology(entities=(EntityType(label="Product"),))
    async with KnowledgeBase(
        tmp_path / "kb.db",
        loaders=[HtmlLoader()],
        chunker=LineChunking(),
        extractor=GadgetExtraction(),
        ontology=ontology,
    ) as kb:
        report = await kb.ingest([page])
        assert report.ok, report.failed
        status = await kb.status()
        assert status.passages == 3 and status.labels == {"Product": 2}


def test_plain_function_mirrors(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    report = evigraph.sync.ingest([_write(tmp_path / "a.txt")], db=db, extractor="rules", progress=False)
    assert report.ok and report.counts()["created"] == 1
    assert evigraph.sync.status(db=db).documents == 1
    assert evigraph.sync.delete(report.documents[0].key, db=db) is True
    assert evigraph.sync.status(db=db).documents == 0


def _records(path: Path, version: str, n: int) -> Path:
    lines = [
        json.dumps(
            {"id": f"doc-{i}", "title": f"Doc {i}", "text": f"Doc {i} {version}. " + "Lisbon and Porto trade. " * 40}
        )
        for i in range(n)
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _ingest_cmd(db: Path, source: Path) -> list[str]:
    return [sys.executable, "-m", "evigraph", "ingest", "--db", str(db), "-q", "--extractor", "rules", str(source)]


@pytest.fixture(scope="module")
def crash_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, float]:
    """A knowledge base at version 1 of 400 documents, version 2 on disk, and how long v2 takes."""
    folder = tmp_path_factory.mktemp("crash")
    v1, v2 = _records(folder / "v1.jsonl", "alpha", 400), _records(folder / "v2.jsonl", "omega", 400)
    base = folder / "base.db"
    assert evigraph.sync.ingest([v1], db=base, extractor="rules", progress=False).ok
    timing = folder / "timing.db"
    shutil.copyfile(base, timing)
    started = time.perf_counter()
    subprocess.run(_ingest_cmd(timing, v2), check=True, capture_output=True)
    return base, v1, v2, time.perf_counter() - started


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.5, 0.7, 0.9])
def test_killed_ingest_leaves_each_document_whole(
    crash_setup: tuple[Path, Path, Path, float], tmp_path: Path, fraction: float
) -> None:
    base, _, v2, duration = crash_setup
    n = 400
    db = tmp_path / "kb.db"
    shutil.copyfile(base, db)
    proc = subprocess.Popen(_ingest_cmd(db, v2), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(duration * fraction)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    conn = engine_connection(db)
    docs = conn.execute("MATCH (d:Document) RETURN d.key, d.version, d.chunk_count").get_all()
    assert len(docs) == n
    for key, version, chunk_count in docs:
        rows = conn.execute(
            "MATCH (c:Chunk)-[:PART_OF]->(d:Document {key: $k}) RETURN c.version, c.text", {"k": key}
        ).get_all()
        assert len(rows) == chunk_count
        assert {r[0] for r in rows} == {version}
        marker, other = ("alpha", "omega") if version == 1 else ("omega", "alpha")
        assert marker in rows[0][1] and not any(other in r[1] for r in rows)
    conn.close()
    assert evigraph.sync.status(db=db).documents == n
    # Whatever the kill interrupted, ingesting again finishes the job.
    assert evigraph.sync.ingest([v2], db=db, extractor="rules", progress=False).ok
    assert evigraph.sync.status(db=db).documents == n
    check = subprocess.run([sys.executable, "-m", "evigraph", "check", "--db", str(db)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr  # no ghost edges, orphans or missing indexes


def test_sync_mirrors_retrieve_and_run_under_a_running_event_loop(tmp_path: Path) -> None:
    """A notebook runs an event loop; `asyncio.run` refuses to start under it, the mirrors do not."""
    import asyncio

    db = tmp_path / "kb.db"
    path = tmp_path / "reef.txt"
    path.write_text("Ana Costa leads ReefWatch, a camera network near the Berlengas islands.", encoding="utf-8")
    assert evigraph.sync.ingest([path], db=db, extractor="rules", progress=False).ok
    plain = evigraph.sync.retrieve("Who leads ReefWatch?", db=db, top_k=3, paths=["passages"])
    assert plain.passages and "Ana Costa" in plain.passages[0].text
    assert evigraph.sync.search is evigraph.sync.retrieve

    async def notebook_cell() -> tuple[int, str]:
        found = evigraph.sync.retrieve("Who leads ReefWatch?", db=db, top_k=3)
        return evigraph.sync.status(db=db).documents, found.to_context(300)

    documents, context = asyncio.run(notebook_cell())
    assert documents == 1 and "[1]" in context and "Ana Costa" in context
