"""The store contract on LadybugDB, Kuzu's maintained successor (`--engine ladybug`).

Kuzu and LadybugDB register the same Python types, so one process cannot load both: the contract
runs again in a pytest process of its own, on LadybugDB only (`EVIGRAPH_TEST_ENGINE`, read by the
contract's conftest, which also checks that the files it made are LadybugDB's and that Kuzu was
never loaded there).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_store_contract_holds_on_ladybug(tmp_path: Path) -> None:
    env = {**os.environ, "EVIGRAPH_TEST_ENGINE": "ladybug"}
    args = ["-m", "pytest", "tests/store/contract", "-q", "-o", "addopts=", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [sys.executable, *args, "--basetemp", str(tmp_path / "run")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 250, tail  # every embedded and scoped case ran
    assert not re.search(r"\d+ (failed|error|skipped)", proc.stdout), tail
