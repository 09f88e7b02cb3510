"""Text in the encodings real folders hold: decoded when it can be told, refused with the fix when not."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from evigraph.errors import ConfigurationError, InputError
from evigraph.ingest.loaders import MarkdownLoader, TextLoader, assumed_encoding
from evigraph.kb import KnowledgeBase

PROSE = "Café Müller opened in São Paulo in 1999. Zoë runs it “for the neighbours” — 5 € a coffee."
CYRILLIC = "Москва — столица России. Ирина Петрова руководит лабораторией."


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF8 + PROSE.encode("utf-8"),
        codecs.BOM_UTF16_LE + PROSE.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + PROSE.encode("utf-16-be"),
        PROSE.encode("utf-16"),  # Python writes the platform's mark
        codecs.BOM_UTF32_LE + PROSE.encode("utf-32-le"),
        PROSE.encode("cp1252"),  # Windows' Western encoding: quotes, dash and euro sign included
    ],
    ids=["utf8-bom", "utf16-le-bom", "utf16-be-bom", "utf16", "utf32-le-bom", "cp1252"],
)
def test_marked_and_western_text_is_decoded(tmp_path: Path, data: bytes) -> None:
    [doc] = TextLoader().load(_write(tmp_path, "note.txt", data), "k")
    assert doc.text == PROSE


def test_latin1_file_is_decoded(tmp_path: Path) -> None:
    path = _write(tmp_path, "legacy.txt", "Café society in Zürich, naïve façade.\r\n".encode("latin-1"))
    [doc] = TextLoader().load(path, "k")
    assert doc.text == "Café society in Zürich, naïve façade.\n"


def test_a_bom_markdown_file_keeps_its_first_heading(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.md", codecs.BOM_UTF16_LE + "# Título\n\nTexto.\n".encode("utf-16-le"))
    [doc] = MarkdownLoader().load(path, "k")
    assert doc.title == "Título" and doc.text.startswith("# Título")


def test_text_in_an_unknown_encoding_fails_with_the_encoding_hint(tmp_path: Path) -> None:
    path = _write(tmp_path, "ru.txt", CYRILLIC.encode("cp1251"))
    with pytest.raises(InputError) as info:
        TextLoader().load(path, "k")
    assert "not UTF-8" in info.value.message and "offset 0" in info.value.message
    assert "--encoding" in info.value.hint and "encoding=" in info.value.hint


def test_a_byte_cp1252_does_not_define_is_not_guessed_as_latin1(tmp_path: Path) -> None:
    path = _write(tmp_path, "odd.txt", b"Plain words and one \x81 byte")
    with pytest.raises(InputError, match="not confidently"):
        TextLoader().load(path, "k")


def test_utf16_without_a_mark_is_named_with_the_flag_to_pass(tmp_path: Path) -> None:
    path = _write(tmp_path, "u16.txt", "Plain ASCII words saved as UTF-16.".encode("utf-16-le"))
    with pytest.raises(InputError) as info:
        TextLoader().load(path, "k")
    assert "UTF-16 (LE)" in info.value.message and "--encoding utf-16-le" in info.value.hint


def test_the_assumed_encoding_decodes_only_files_that_need_it(tmp_path: Path) -> None:
    russian = _write(tmp_path, "ru.txt", CYRILLIC.encode("cp1251"))
    utf8 = _write(tmp_path, "fr.txt", PROSE.encode("utf-8"))
    u16 = _write(tmp_path, "u16.txt", CYRILLIC.encode("utf-16-le"))
    with assumed_encoding("cp1251"):
        assert TextLoader().load(russian, "a")[0].text == CYRILLIC
        assert TextLoader().load(utf8, "b")[0].text == PROSE  # valid UTF-8 is not re-read as cp1251
    with assumed_encoding("utf-16-le"):
        assert TextLoader().load(u16, "c")[0].text == CYRILLIC
    with pytest.raises(InputError):  # outside the block the guess is gone again
        TextLoader().load(russian, "a")


def test_an_assumed_encoding_that_does_not_fit_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, "fr.txt", "Zoë".encode("cp1252") + b" \x98\x81")
    with assumed_encoding("cp1251"), pytest.raises(InputError) as info:
        TextLoader().load(path, "k")
    assert "not valid cp1251" in info.value.message and "--encoding" in info.value.message


@pytest.mark.parametrize("name", ["no-such-codec", "base64", "rot13"])
def test_unknown_or_non_text_encodings_are_refused(name: str) -> None:
    with pytest.raises(ConfigurationError) as info, assumed_encoding(name):
        pass
    assert repr(name) in info.value.message and "cp1252" in info.value.hint


def test_binary_is_still_binary(tmp_path: Path) -> None:
    path = _write(tmp_path, "blob.txt", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    with pytest.raises(InputError, match="binary"):
        TextLoader().load(path, "k")
    with assumed_encoding("cp1251"), pytest.raises(InputError, match="binary"):
        TextLoader().load(path, "k")


async def test_an_undecodable_file_fails_alone_and_encoding_fixes_it(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    _write(folder, "ru.txt", CYRILLIC.encode("cp1251"))
    _write(folder, "bom.txt", codecs.BOM_UTF16_LE + PROSE.encode("utf-16-le"))
    _write(folder, "latin.txt", "Zoë paid 5 € for the café.".encode("cp1252"))
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        report = await kb.ingest([folder], progress=False)
        [failed] = report.failed
        assert failed.key.endswith("/ru.txt") and "--encoding" in (failed.error or "")
        assert report.counts()["created"] == 2
        assert (await kb.source_status(failed.key)).state == "failed"

        # The hint's fix: the named encoding applies to every file that is not UTF-8, so name it for that file.
        again = await kb.ingest([folder / "ru.txt"], progress=False, encoding="cp1251")
        assert again.ok and again.counts()["created"] == 1
        assert {d.status for d in (await kb.ingest([folder], progress=False)).documents} == {"unchanged", "failed"}
        assert kb.store is not None
        rows = await kb.store.cypher_query("MATCH (c:Chunk) RETURN c.text AS text")
    texts = " ".join(r["text"] for r in rows)
    assert "Ирина Петрова" in texts and "Zoë paid 5 €" in texts and "São Paulo" in texts


async def test_a_bad_encoding_name_fails_before_anything_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Lisbon is in Portugal.", encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as kb:
        with pytest.raises(ConfigurationError, match="unknown text encoding"):
            await kb.ingest([tmp_path / "a.txt"], progress=False, encoding="klingon")
    assert not (tmp_path / "kb.db").exists()
