"""Bad input to code ingest: missing paths, files too large, files that do not parse. Each is
reported, the rest is ingested, and nothing stored before is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.cli import main
from evigraph.errors import ConfigurationError

GOOD = 'def ok() -> int:\n    """Fine."""\n    return 1\n'


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


async def test_a_missing_path_is_reported_and_creates_no_knowledge_base(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db) as kb:
        report = await kb.ingest_code([tmp_path / "nope"])
    assert [(f.path, f.error) for f in report.failed] == [
        (str(tmp_path / "nope"), f"{tmp_path / 'nope'} does not exist")
    ]
    assert not db.exists()


async def test_a_missing_path_beside_good_ones_fails_alone(tmp_path: Path) -> None:
    root = repo(tmp_path, {"a.py": GOOD})
    (tmp_path / "notes.txt").write_text("not code", encoding="utf-8")
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([root, tmp_path / "nope", tmp_path / "notes.txt"])
    assert report.parsed == 1
    assert ["does not exist" in f.error for f in report.failed] == [True, False]
    assert "is not a source file code ingest reads" in report.failed[1].error


async def test_a_file_over_the_limit_is_skipped_and_reported(tmp_path: Path) -> None:
    root = repo(tmp_path, {"a.py": GOOD, "big.py": GOOD + "X = 1\n" * 400})
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([root], max_file_kb=1)
        assert report.parsed == 1 and report.files == 1
        [skipped] = report.too_large
        assert skipped.path.endswith("big.py") and "over the limit" in skipped.error
        with pytest.raises(ConfigurationError, match="max_file_kb must be positive"):
            await kb.ingest_code([root], max_file_kb=0)


async def test_a_syntax_error_is_reported_the_others_ingested_and_nothing_lost(tmp_path: Path) -> None:
    root = repo(tmp_path, {"a.py": GOOD, "b.py": GOOD.replace("ok", "fine")})
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        assert (await kb.ingest_code([root])).parsed == 2
        (root / "b.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
        (root / "c.py").write_text(GOOD.replace("ok", "new"), encoding="utf-8")
        report = await kb.ingest_code([root])
        assert (report.parsed, report.unchanged, report.removed) == (1, 1, 0)
        [failed] = report.failed
        assert failed.path.endswith("b.py") and failed.error.startswith("Python syntax error at line 1")
        assert kb.store is not None
        names = {r["n"] for r in await kb.store.cypher_query("MATCH (f:Function) RETURN f.name AS n")}
        assert names == {"ok", "fine", "new"}  # b.py's last good version stays


def test_cli_reports_failures_and_exits_non_zero_when_nothing_was_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "kb.db")
    assert main(["ingest-code", str(tmp_path / "nope"), "--db", db]) == 1
    assert "does not exist" in capsys.readouterr().err
    root = repo(tmp_path, {"a.py": GOOD, "big.py": GOOD * 200, "bad.py": "class (:\n"})
    assert main(["ingest-code", str(root), "--db", db, "--max-file-kb", "1", "--no-calls"]) == 0
    out = capsys.readouterr()
    assert "1 parsed" in out.out and "skipped" in out.err and "big.py" in out.err and "failed" in out.err
    assert main(["ingest_code", str(root), "--db", db, "--json"]) == 0  # the tool's name works too
    report = json.loads(capsys.readouterr().out)
    assert (report["parsed"], report["unchanged"]) == (1, 1)  # big.py is read now; a.py is unchanged
    assert main(["ingest-code", str(root), "--db", db, "--max-file-kb", "0"]) == 2


async def test_a_walk_passes_over_vendored_built_and_minified_code_unless_named(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        {
            "app.py": GOOD,
            "web/ui.js": "export function show() { return 1 }\n",
            "vendor/lib.py": GOOD,
            "build/lib/app.py": GOOD,
            "web/dist/bundle.js": "function a(){}\n",
            "web/graph.min.js": "function b(){}\n",
        },
    )
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        walked = await kb.ingest_code([root])
        assert walked.files == walked.parsed == 2 and not walked.failed
        named = await kb.ingest_code([root / "vendor" / "lib.py"])
        assert named.parsed == 1 and not named.failed
