"""The operator limits on the command line: one flag per `Limits` field on `evigraph mcp` and `evigraph serve`,
and a bad value, by flag or variable, refused in one line naming the fix before anything is opened."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.test_cli_serve import refused
from tests.conftest import free_port, run_cli

from evigraph.limits import SETTINGS, env_name, flag_name

CLEAN = {name: "" for name in map(env_name, SETTINGS)}


@pytest.mark.parametrize("verb", ["mcp", "serve"])
def test_every_limit_has_its_flag_and_variable(verb: str) -> None:
    result = run_cli(verb, "--help")
    assert result.code == 0, result.err
    help_text = " ".join(result.out.split())
    for setting in SETTINGS:
        assert flag_name(setting) in help_text and f"${env_name(setting)}" in help_text, setting


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--max-hits", "0"], {}, ["--max-hits='0' is not a possible max_hits", "from 1 to 200", "EVIGRAPH_MAX_HITS"]),
        ([], {"EVIGRAPH_READ_DEADLINE_SECONDS": "-1"}, ["EVIGRAPH_READ_DEADLINE_SECONDS='-1'", "above 0"]),
        (["--max-response-chars", "lots"], {}, ["--max-response-chars='lots'", "valid integer"]),
    ],
)
@pytest.mark.parametrize("verb", ["mcp", "serve"])
def test_a_bad_limit_is_refused_before_anything_opens(
    tmp_path: Path, verb: str, args: list[str], env: dict[str, str], words: list[str]
) -> None:
    db = tmp_path / "kb.db"
    port = ["--port", str(free_port())] if verb == "serve" else []
    result = run_cli(verb, "--db", str(db), *port, *args, cwd=tmp_path, env={**CLEAN, **env}, timeout=60)
    refused(result, *words)
    assert not db.exists()
