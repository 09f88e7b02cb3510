"""Chunkers: offsets, caps, sentence integrity, overlap, breadcrumbs, pages."""

from __future__ import annotations

import asyncio
import threading
from itertools import pairwise
from pathlib import Path

import pytest
from fpdf import FPDF

from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking import (
    CallableChunking,
    ChunkingStrategy,
    FixedSizeChunking,
    SentenceTokenCapChunking,
    StructuralChunking,
    chunker_by_name,
)
from evigraph.ingest.chunking.sentence import sentence_spans
from evigraph.ingest.loaders import MarkdownLoader, PdfLoader
from evigraph.ingest.sentences import split_sentences
from evigraph.models import LoadedDocument, TextChunk
from evigraph.providers.tokenizers import Tokenizer, default_tokenizer

TOK = default_tokenizer()

SUBJECTS = ["Alice", "Bob", "The committee", "Dr. Smith", "The river", "Our team", "A small company"]
VERBS = ["visited", "described", "funded", "studied", "ignored", "praised", "rebuilt"]
OBJECTS = ["the old bridge", "a new theory", "the harbour in 1998", "three villages", "the archive"]


def prose(n: int) -> str:
    """Deterministic varied sentences, with paragraph breaks now and then."""
    out = []
    for i in range(n):
        s = f"{SUBJECTS[i % 7]} {VERBS[(i * 3) % 7]} {OBJECTS[(i * 5) % 5]} on day {i}."
        out.append(s + ("\n\n" if i % 6 == 5 else " "))
    return "".join(out).strip()


def doc(text: str, **kwargs: object) -> LoadedDocument:
    return LoadedDocument(key="k", title="t", text=text, loader="text", **kwargs)  # type: ignore[arg-type]


def check_invariants(document: LoadedDocument, chunks: list[TextChunk], exact: bool = True) -> None:
    assert chunks, "no chunks produced"
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text.strip() and c.text == c.text.strip()
        assert c.page == document.page_at(c.start)
        if exact:
            assert document.text[c.start : c.end] == c.text
    starts = [c.start for c in chunks]
    assert starts == sorted(starts), "chunks out of reading order"


def covered_sentences(document: LoadedDocument, chunks: list[TextChunk]) -> set[tuple[int, int]]:
    return {(s, e) for s, e in split_sentences(document.text) if any(c.start <= s and e <= c.end for c in chunks)}


# -- fixed --------------------------------------------------------------------------------------


def test_fixed_size_windows_overlap_and_keep_words() -> None:
    d = doc(prose(60))
    chunks = FixedSizeChunking(chunk_size=200, chunk_overlap=40).chunk(d)
    check_invariants(d, chunks)
    assert len(chunks) > 5
    assert all(len(c.text) <= 200 for c in chunks)
    for a, b in pairwise(chunks):
        assert b.start < a.end, "consecutive windows must overlap"
        assert b.start > a.start
    for c in chunks[:-1]:
        assert d.text[c.end].isspace(), "cut inside a word"
    assert chunks[-1].end == len(d.text)
    covered = set().union(*(range(c.start, c.end) for c in chunks))
    assert all(i in covered for i, ch in enumerate(d.text) if not ch.isspace())


def test_fixed_size_without_whitespace_still_progresses() -> None:
    d = doc("x" * 1050)
    chunks = FixedSizeChunking(chunk_size=100, chunk_overlap=99).chunk(d)
    check_invariants(d, chunks)
    assert chunks[-1].end == 1050
    assert all(len(c.text) <= 100 for c in chunks)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_fixed_size_rejects_bad_options(size: int, overlap: int) -> None:
    with pytest.raises(ConfigurationError):
        FixedSizeChunking(chunk_size=size, chunk_overlap=overlap)


# -- sentence -----------------------------------------------------------------------------------


def test_sentence_chunks_respect_cap_and_never_split_sentences() -> None:
    d = doc(prose(120))
    chunks = SentenceTokenCapChunking(max_tokens=60, overlap_sentences=2).chunk(d)
    check_invariants(d, chunks)
    sentences = split_sentences(d.text)
    starts = {s for s, _ in sentences}
    ends = {e for _, e in sentences}
    for c in chunks:
        assert TOK.count(c.text) <= 60
        assert c.start in starts and c.end in ends, f"chunk {c.index} cuts a sentence"
    assert covered_sentences(d, chunks) == set(sentences)


def test_sentence_chunks_overlap_by_last_sentences() -> None:
    d = doc(prose(80))
    chunks = SentenceTokenCapChunking(max_tokens=80, overlap_sentences=2).chunk(d)
    sentences = split_sentences(d.text)
    assert len(chunks) > 3
    for a, b in pairwise(chunks):
        inside_a = [s for s in sentences if a.start <= s[0] and s[1] <= a.end]
        assert b.start == inside_a[-2][0], "next chunk must start with the last two sentences"
        assert b.end > a.end


def test_sentence_zero_overlap_is_a_partition() -> None:
    d = doc(prose(50))
    chunks = SentenceTokenCapChunking(max_tokens=50, overlap_sentences=0).chunk(d)
    for a, b in pairwise(chunks):
        assert b.start >= a.end


def test_huge_overlap_still_makes_progress() -> None:
    d = doc(prose(40))
    chunks = SentenceTokenCapChunking(max_tokens=40, overlap_sentences=50).chunk(d)
    check_invariants(d, chunks)
    ends = [c.end for c in chunks]
    assert ends == sorted(set(ends)), "every chunk must add new text"
    assert all(TOK.count(c.text) <= 40 for c in chunks)
    assert ends[-1] == len(d.text)


def test_over_long_sentence_is_split_by_words_under_cap() -> None:
    long_sentence = " ".join(f"word{i}" for i in range(400)) + "."
    d = doc(f"Short opener. {long_sentence} Short closer.")
    chunks = SentenceTokenCapChunking(max_tokens=50, overlap_sentences=1).chunk(d)
    check_invariants(d, chunks)
    assert all(TOK.count(c.text) <= 50 for c in chunks)
    words = {m for c in chunks for m in c.text.replace(".", " ").split()}
    assert {f"word{i}" for i in range(400)} <= words, "a word was lost or cut"
    for c in chunks:  # pieces end at word boundaries
        assert c.end == len(d.text) or d.text[c.end] in " ."


def test_giant_word_is_split_by_characters() -> None:
    blob = "A" + "x9Q" * 2000
    d = doc(f"Before. {blob} After.")
    chunks = SentenceTokenCapChunking(max_tokens=30).chunk(d)
    check_invariants(d, chunks)
    assert all(TOK.count(c.text) <= 30 for c in chunks)
    assert len(chunks) > 5
    blob_start = d.text.index(blob)
    covered = set().union(*(range(c.start, c.end) for c in chunks))
    assert set(range(blob_start, blob_start + len(blob))) <= covered, "part of the word was lost"


class CountingTokenizer(Tokenizer):
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0
        self.chars = 0

    def count(self, text: str) -> int:
        self.calls += 1
        self.chars += len(text)
        return TOK.count(text)


def test_token_counting_is_linear() -> None:
    d = doc(prose(2000))
    tok = CountingTokenizer()
    chunks = SentenceTokenCapChunking(max_tokens=200, overlap_sentences=2, tokenizer=tok).chunk(d)
    n_sentences = len(split_sentences(d.text))
    assert tok.calls <= n_sentences + len(chunks) + 5
    assert tok.chars <= 3 * len(d.text), "text was tokenized far more than once or twice"


def test_paragraph_windowed_sentences_match_split_sentences() -> None:
    text = (
        "Dr. Smith arrived.  He said e.g. nothing.\n\nend. \n \nlower case follows. U.S.A. is big!\n"
        'Next line? "Quoted." (Bracketed.)\n\n\n' + prose(30)
    )
    assert list(sentence_spans(text)) == split_sentences(text)
    assert list(sentence_spans(text, 10, 300)) == [(s + 10, e + 10) for s, e in split_sentences(text[10:300])]


def test_empty_and_whitespace_documents_give_no_chunks() -> None:
    assert SentenceTokenCapChunking().chunk(doc("   \n\n  ")) == []
    assert FixedSizeChunking().chunk(doc(" \n ")) == []


def test_sentence_rejects_bad_options() -> None:
    with pytest.raises(ConfigurationError):
        SentenceTokenCapChunking(max_tokens=0)
    with pytest.raises(ConfigurationError):
        SentenceTokenCapChunking(overlap_sentences=-1)


# -- pages --------------------------------------------------------------------------------------


def test_pdf_chunks_carry_page_numbers(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for page in range(1, 4):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Marker{page} opens page {page}. " + prose(12).replace("\n\n", " "))
    path = tmp_path / "paged.pdf"
    pdf.output(str(path))
    [d] = PdfLoader().load(path, "paged")
    for chunker in (
        SentenceTokenCapChunking(max_tokens=40),
        FixedSizeChunking(200, 20),
        StructuralChunking(max_tokens=40),
    ):
        chunks = chunker.chunk(d)
        check_invariants(d, chunks)
        assert {c.page for c in chunks} == {1, 2, 3}
        for page in range(1, 4):
            first = next(c for c in chunks if f"Marker{page}" in c.text)
            assert first.page == page or first.start < d.text.index(f"Marker{page}")


# -- structural ---------------------------------------------------------------------------------

GUIDE = """\
# Guide

Evigraph builds a knowledge graph. It runs locally.

## Install

### Linux

Use the package manager. Then run the installer.

```bash
# not a heading
pip install evigraph
```

### Windows

Download the wheel.

## Usage

| Command | Meaning |
|---------|---------|
| ingest  | add documents |
| search  | find passages |
"""


def load_md(tmp_path: Path, text: str) -> LoadedDocument:
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    return MarkdownLoader().load(path, "doc")[0]


def test_structural_breadcrumbs_follow_heading_hierarchy(tmp_path: Path) -> None:
    d = load_md(tmp_path, GUIDE)
    chunks = StructuralChunking(max_tokens=384).chunk(d)
    check_invariants(d, chunks)
    by_crumbs = {c.breadcrumbs: c.text for c in chunks}
    assert set(by_crumbs) == {
        ("Guide",),
        ("Guide", "Install", "Linux"),
        ("Guide", "Install", "Windows"),
        ("Guide", "Usage"),
    }
    linux = by_crumbs[("Guide", "Install", "Linux")]
    assert linux.startswith("## Install") and "pip install evigraph" in linux  # empty parent kept
    assert "# not a heading" in linux
    assert "Download the wheel" not in linux, "chunk straddles two sections"
    assert by_crumbs[("Guide", "Usage")].endswith(  # table whole, each row naming its columns
        "Command: ingest; Meaning: add documents.\nCommand: search; Meaning: find passages."
    )


def test_structural_splits_big_section_keeping_breadcrumbs(tmp_path: Path) -> None:
    d = load_md(tmp_path, "# Top\n\n## Long part\n\n" + prose(90) + "\n\n## Short\n\nJust this.\n")
    chunks = StructuralChunking(max_tokens=60).chunk(d)
    check_invariants(d, chunks)
    assert all(TOK.count(c.text) <= 60 for c in chunks)
    long_chunks = [c for c in chunks if c.breadcrumbs == ("Top", "Long part")]
    assert len(long_chunks) > 5
    assert covered_sentences(d, long_chunks) >= {s for s in split_sentences(d.text) if "day" in d.text[s[0] : s[1]]}
    assert chunks[-1].breadcrumbs == ("Top", "Short") and chunks[-1].text.endswith("Just this.")
    starts = {s for s, _ in split_sentences(d.text)}
    assert all(c.start in starts for c in long_chunks)


def test_structural_keeps_table_whole_until_it_exceeds_cap(tmp_path: Path) -> None:
    rows = "\n".join(f"| item {i} | value {i * 7} |" for i in range(60))
    table = "| Item | Value |\n|------|-------|\n" + rows
    d = load_md(tmp_path, f"# Data\n\nIntro line.\n\n{table}\n\nOutro line.\n")
    readable = "\n".join(f"Item: item {i}; Value: value {i * 7}." for i in range(60))
    whole = StructuralChunking(max_tokens=2000).chunk(d)
    assert any(readable in c.text for c in whole)
    small = StructuralChunking(max_tokens=80).chunk(d)
    check_invariants(d, small)
    assert all(TOK.count(c.text) <= 80 for c in small)
    table_chunks = [c for c in small if "Item: item" in c.text]
    assert len(table_chunks) > 2
    for c in table_chunks:
        for line in c.text.split("\n"):
            if "item" in line:  # a row cut in two would lose its header or its value
                assert line.startswith("Item: item") and "; Value: value " in line, "table row cut"
    assert all(c.breadcrumbs == ("Data",) for c in small)


def test_structural_without_elements_matches_sentence_chunker() -> None:
    d = doc(prose(50))
    expected = SentenceTokenCapChunking(max_tokens=70, overlap_sentences=1).chunk(d)
    assert StructuralChunking(max_tokens=70, overlap_sentences=1).chunk(d) == expected


def test_structural_uses_custom_fallback_with_breadcrumbs(tmp_path: Path) -> None:
    d = load_md(tmp_path, "# A\n\n## B\n\n" + prose(40).replace("\n\n", " ") + "\n")
    chunks = StructuralChunking(max_tokens=60, fallback=FixedSizeChunking(150, 0)).chunk(d)
    check_invariants(d, chunks)
    body = [c for c in chunks if "day" in c.text]
    assert len(body) > 3
    assert all(len(c.text) <= 150 for c in body[1:])
    assert all(c.breadcrumbs == ("A", "B") for c in chunks)


def test_structural_rejects_overlap_with_fallback() -> None:
    with pytest.raises(ConfigurationError, match="overlap_sentences"):
        StructuralChunking(overlap_sentences=1, fallback=FixedSizeChunking())
    assert StructuralChunking(fallback=FixedSizeChunking()).fallback.name == "fixed"


# -- callable -----------------------------------------------------------------------------------

TEXT = "First part here.  Second   part\nhere. Third part."


def test_callable_sync_maps_offsets_and_drops_empty() -> None:
    d = doc(TEXT)
    chunks = CallableChunking(lambda t: ["First part here.", "", "  ", "Third part."]).chunk(d)
    check_invariants(d, chunks)
    assert [c.text for c in chunks] == ["First part here.", "Third part."]
    assert chunks[1].start == TEXT.index("Third")


def test_callable_handles_normalised_whitespace_and_overlap() -> None:
    d = doc(TEXT)
    pieces = ["First part here. Second part", "Second part here.", "Paraphrased text nowhere"]
    chunks = CallableChunking(lambda t: pieces).chunk(d)
    assert d.text[chunks[0].start : chunks[0].end] == "First part here.  Second   part"
    assert d.text[chunks[1].start : chunks[1].end] == "Second   part\nhere."
    assert chunks[2].start == chunks[1].end  # not found: placed after the previous piece
    assert chunks[2].text == "Paraphrased text nowhere"


def test_callable_async_without_running_loop() -> None:
    async def split(text: str) -> list[str]:
        await asyncio.sleep(0)
        return text.split(". ")

    chunks = CallableChunking(split).chunk(doc("One. Two. Three."))
    assert [c.text for c in chunks] == ["One", "Two", "Three."]
    assert [c.start for c in chunks] == [0, 5, 10]


async def test_callable_async_inside_running_loop_uses_worker_thread() -> None:
    seen: list[str] = []

    async def split(text: str) -> list[str]:
        seen.append(threading.current_thread().name)
        return [text]

    chunks = CallableChunking(split).chunk(doc("Alpha beta."))
    assert [c.text for c in chunks] == ["Alpha beta."]
    assert seen and seen[0] != threading.current_thread().name


def test_callable_rejects_non_list_results() -> None:
    with pytest.raises(ConfigurationError):
        CallableChunking(lambda t: t).chunk(doc("text"))


# -- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("fixed", FixedSizeChunking),
        ("Sentence", SentenceTokenCapChunking),
        ("structural", StructuralChunking),
    ],
)
def test_chunker_by_name(name: str, cls: type[ChunkingStrategy]) -> None:
    chunker = chunker_by_name(name)
    assert isinstance(chunker, cls)
    assert chunker.name == name.lower()


def test_chunker_by_name_lists_valid_names() -> None:
    with pytest.raises(ConfigurationError) as info:
        chunker_by_name("semantic")
    assert "fixed, sentence, structural" in info.value.hint


def test_split_sentences_hands_each_caller_its_own_list() -> None:
    """Splits are cached per text; a caller changing its list must not change the next caller's."""
    text = "Ada wrote notes. Babbage built engines."
    first = split_sentences(text)
    first.append((0, 1))
    first[0] = (5, 5)
    assert split_sentences(text) == [(0, 16), (17, 39)]
