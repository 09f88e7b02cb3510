"""`import evigraph` and `evigraph --help` must not load the engine, PDF reader or NLP models."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("ladybug", "kuzu", "spacy", "pypdf", "tqdm", "bpe_openai", "tree_sitter")


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return {m for m in out.strip().split(",") if m}


def test_import_evigraph_is_light() -> None:
    assert _loaded_after("import evigraph; evigraph.KnowledgeBase") == set()


def test_cli_help_is_light() -> None:
    code = (
        "import contextlib, io\nfrom evigraph.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])"
    )
    assert _loaded_after(code) == set()
    assert (
        "pydantic"
        not in subprocess.run(
            [sys.executable, "-c", f"{code}\nimport sys; print(sorted(sys.modules))"], capture_output=True, text=True
        ).stdout
    )
