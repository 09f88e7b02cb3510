"""Adversarial Cypher against real toolkits, each case in its own forked process.

Every case runs against a read-only toolkit (the shared base database, opened read-only) and a
writable toolkit (the case's own copy of it). A case passes when, in both, the call ends in a
result or a ToolError, and nothing happened: (a) the canary file's secret and /etc/passwd never
appear in a result, (b) no file appears or changes in the sandbox (targets, canary, base
database) and the shared library the payloads try to load never runs its constructor, (c) the
writable copy's fingerprint (tables, indexes, every row) equals the base's, and (d) the child
exits normally, so a segmentation fault in the engine fails the case instead of passing silently.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.security.cypher_corpus import FRAGMENTS, PASSWD_MARK, SECRET, TRICKS, Case, Paths, corpus, payloads

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.errors import CypherRefused
from evigraph.store.cypher.lexer import Kind, tokenize
from evigraph.store.cypher.params import check_params
from evigraph.store.cypher.rules import FORBIDDEN_KEYWORDS
from evigraph.store.embedded.cypher_guard import guard
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.store import EmbeddedStore

pytestmark = pytest.mark.slow

CASE_TIMEOUT_S = 90
WORKERS = max(1, min(2, os.cpu_count() or 1))
_FORK = multiprocessing.get_context("fork")
_EXTENSION_C = """
#include <stdio.h>
__attribute__((constructor)) static void loaded(void) {
    FILE *f = fopen("%s", "w"); if (f) { fputs("loaded", f); fclose(f); }
}
"""


# -- the sandbox -------------------------------------------------------------------------------


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        canary = root / "canary"
        canary.mkdir()
        (canary / "secret.csv").write_text(f"name,secret\nalice,{SECRET}\n", encoding="utf-8")
        self.paths = Paths(canary / "secret.csv", canary / "evil.kuzu_extension", canary / "LOADED", root / "targets")
        self.paths.targets.mkdir()
        _build_extension(self.paths.extension, self.paths.loaded_marker)
        self.base = root / "base" / "kb.db"
        self.cases = root / "cases"
        self.cases.mkdir()

    def files(self) -> dict[str, tuple[int, int, str]]:
        """Every file outside the per-case copies: size, modification time, and a hash of small ones
        (hashing the 30 MB base database in every child would double the file's run time).

        The per-case folders are pruned from the walk, not filtered after it: a neighbour case
        deletes its folder when it ends, and a walk inside it would fail on the vanished folder."""
        out = {}
        found: list[Path] = []
        for folder, dirs, names in os.walk(self.root):
            if Path(folder) == self.root:
                dirs[:] = [d for d in dirs if self.root / d != self.cases]
            found += [Path(folder, n) for n in names]
        for path in sorted(found):
            if path.is_file():
                stat = path.stat()
                small = stat.st_size < 1_000_000
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if small else ""
                out[str(path)] = (stat.st_size, stat.st_mtime_ns, digest)
        return out


def _build_extension(target: Path, marker: Path) -> None:
    """A real shared library whose constructor leaves a marker: proof if anything ever loads it."""
    source = target.with_suffix(".c")
    source.write_text(_EXTENSION_C % marker.as_posix(), encoding="utf-8")
    built = shutil.which("cc") and subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(target), str(source)], capture_output=True, check=False
    )
    if not built or built.returncode != 0 or not target.exists():
        target.write_bytes(b"\x7fELF not a library")  # still a path a payload can name
    source.unlink()


async def _build_base(db: Path) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text="Acme Robotics Corp is in Oslo. Dr. Ingrid Halvorsen founded Acme Robotics Corp.", key="a")
        await kb.ingest(text="Globex Company is a rival of Acme Robotics Corp. Prof. Hank Scorpio runs it.", key="b")


def fingerprint(tx: Tx) -> str:
    """Tables, indexes and every row, hashed: any write or schema change alters it."""
    digest = hashlib.sha256()
    tables = sorted((r["name"], r["type"]) for r in tx.rows("CALL show_tables() RETURN name, type"))
    digest.update(repr(tables).encode())
    digest.update(repr(sorted(map(repr, tx.rows("CALL show_indexes() RETURN *")))).encode())
    for name, kind in tables:
        query = f"MATCH (n:`{name}`) RETURN n" if kind == "NODE" else f"MATCH ()-[n:`{name}`]->() RETURN n"
        digest.update(repr(sorted(repr(r) for r in tx.rows(query))).encode())
    return digest.hexdigest()


async def _fingerprint(kb: KnowledgeBase) -> str:
    await kb.open()
    store = kb.store
    assert store is not None
    assert isinstance(store, EmbeddedStore)
    return await store.executor.read(fingerprint)


# -- one case, in a forked child ---------------------------------------------------------------


def _child(sandbox: Sandbox, case: Case, out: Connection) -> None:
    before = sandbox.files()
    copy = sandbox.cases / str(os.getpid()) / "kb.db"
    copy.parent.mkdir()
    shutil.copy(sandbox.base, copy)
    report: dict[str, Any] = asyncio.run(_both(sandbox.base, copy, case))
    report["files"] = sorted(set(sandbox.files().items()) ^ set(before.items()))
    shutil.rmtree(copy.parent, ignore_errors=True)
    out.send(report)
    out.close()


async def _both(base: Path, copy: Path, case: Case) -> dict[str, Any]:
    report: dict[str, Any] = {}
    async with KnowledgeBase(base, read_only=True) as kb:
        report["read_only"] = await _call(Toolkit(kb, read_only=True), case)
    async with KnowledgeBase(copy) as kb:
        report["writable"] = await _call(Toolkit(kb, read_only=False), case)
        report["fingerprint"] = await _fingerprint(kb)
    return report


async def _call(tk: Toolkit, case: Case) -> dict[str, str]:
    try:
        result = await tk.call("cypher_query", {"query": case.query, "params": case.params})
    except ToolError as exc:
        return {"outcome": "refused", "text": str(exc)}
    except Exception as exc:
        return {"outcome": "error", "text": f"{type(exc).__name__}: {exc}"}
    text = result.to_llm_text() + json.dumps(result.model_dump(), default=str)
    # checked here, so the report stays small enough for the pipe (the parent reads it at exit)
    leaked = SECRET in text or PASSWD_MARK in text
    return {"outcome": "ok", "text": ("LEAKED " if leaked else "") + text[:2000]}


def run_cases(sandbox: Sandbox, cases: list[Case]) -> list[tuple[Case, dict[str, Any] | str]]:
    """Each case in a fresh forked child, WORKERS at a time; a crash or a hang is its report.

    A file written by one case may be reported by the other case running beside it: the sandbox
    is shared, so the test fails either way, only the name in the message can be the neighbour's."""
    results: list[tuple[Case, dict[str, Any] | str]] = []
    pending = list(cases)
    running: dict[Any, tuple[Any, Connection, Case, float]] = {}
    while pending or running:
        while pending and len(running) < WORKERS:
            case = pending.pop(0)
            receive, send = _FORK.Pipe(duplex=False)
            proc = _FORK.Process(target=_child, args=(sandbox, case, send), daemon=True)
            proc.start()
            send.close()
            running[proc.sentinel] = (proc, receive, case, time.monotonic())
        for sentinel in wait(list(running), timeout=1.0):
            proc, receive, case, _ = running.pop(sentinel)
            proc.join()
            try:
                report = receive.recv() if receive.poll() else None
            except EOFError:  # the child died before it could answer
                report = None
            results.append((case, report if proc.exitcode == 0 and report else f"child exit code {proc.exitcode}"))
        for sentinel, (proc, _, case, started) in list(running.items()):
            if time.monotonic() - started > CASE_TIMEOUT_S:
                proc.kill()
                proc.join()
                running.pop(sentinel)
                results.append((case, f"timed out after {CASE_TIMEOUT_S} s"))
    return results


def problems(case: Case, report: dict[str, Any] | str, base_print: str, sandbox: Sandbox) -> list[str]:
    if isinstance(report, str):
        return [report]
    found = []
    for mode in ("read_only", "writable"):
        outcome, text = report[mode]["outcome"], report[mode]["text"]
        if outcome == "error":
            found.append(f"{mode}: not a result or a ToolError: {text[:300]}")
        if text.startswith("LEAKED") or SECRET in text or PASSWD_MARK in text:
            found.append(f"{mode}: a file's content came back")
        if case.must_refuse and outcome != "refused":
            found.append(f"{mode}: ran instead of being refused: {text[:200]}")
    if report["files"]:
        found.append(f"files appeared or changed: {report['files'][:3]}")
    if report["fingerprint"] != base_print:
        found.append("the writable database changed")
    if sandbox.paths.loaded_marker.exists():
        found.append("the shared library was loaded")
    return found


# -- fixtures and tests ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path_factory.mktemp("cypher_sandbox"))
    asyncio.run(_build_base(box.base))
    # One case in this process first: the lazy imports it triggers (the tool modules, among
    # others) are then inherited by every forked child instead of repeated in each.
    warm = box.root / "warm" / "kb.db"
    warm.parent.mkdir()
    shutil.copy(box.base, warm)
    asyncio.run(_both(box.base, warm, Case("warm", "MATCH (e:Entity) RETURN e.name")))
    shutil.rmtree(warm.parent)
    yield box


@pytest.fixture(scope="module")
def base_print(sandbox: Sandbox) -> str:
    async def read() -> str:
        async with KnowledgeBase(sandbox.base, read_only=True) as kb:
            return await _fingerprint(kb)

    return asyncio.run(read())


def subprocess_corpus(paths: Paths) -> list[Case]:
    """Every payload bare and under the issue's exploit, every trick on a few payloads, the extras."""
    everything = corpus(paths)
    keep_tricks = {"bare", "issue_exploit"}
    keep_payloads = {"load_canary", "copy_to", "load_ext_path", "current_setting_bt"}
    return [
        c
        for c in everything
        if ":" not in c.name or c.name.split(":")[0] in keep_tricks or c.name.split(":")[1] in keep_payloads
    ]


def test_corpus_in_subprocesses_on_read_only_and_writable_toolkits(sandbox: Sandbox, base_print: str) -> None:
    cases = subprocess_corpus(sandbox.paths)
    assert len(cases) >= 200
    before = sandbox.files()
    results = run_cases(sandbox, cases)
    assert len(results) == len(cases)
    failures = {c.name: p for c, r in results if (p := problems(c, r, base_print, sandbox))}
    assert not failures, json.dumps(failures, indent=1)[:6000]
    controls = {c.name: r for c, r in results if c.name.endswith("_control") and isinstance(r, dict)}
    assert len(controls) == 4 and all(r["read_only"]["outcome"] == "ok" for r in controls.values())
    assert sandbox.files() == before


def test_every_combination_is_refused_or_harmless_to_the_guard(sandbox: Sandbox) -> None:
    """The full cross product (payloads x tricks), checked in-process against the guard alone."""
    cases = corpus(sandbox.paths)
    assert len(cases) >= len(payloads(sandbox.paths)) * len(TRICKS)
    for case in cases:
        try:
            rewritten = guard(case.query, check_params(case.params), 101).text
        except CypherRefused:
            continue
        assert not case.must_refuse, case.name
        _assert_harmless(rewritten)


def _assert_harmless(text: str) -> None:
    tokens = tokenize(text).tokens
    assert not [t for t in tokens if t.kind is Kind.PUNCT and t.value == ";"], text
    words = {t.value.upper() for i, t in enumerate(tokens) if t.is_name and not (i and tokens[i - 1].value == ".")}
    assert not words & set(FORBIDDEN_KEYWORDS), text
    assert tokens[-1].kind is Kind.NUMBER and tokens[-2].is_word("LIMIT"), text


_SOUPS = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=9).map(" ".join)


@settings(max_examples=400, deadline=None, database=None)
@given(_SOUPS)
def test_random_soups_never_pass_the_guard_with_a_dangerous_word(soup: str) -> None:
    try:
        rewritten = guard(soup, {"x": 1}, 101).text
    except CypherRefused:
        return
    _assert_harmless(rewritten)


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_SOUPS, min_size=2, max_size=2))
def test_random_soups_in_subprocesses(sandbox: Sandbox, base_print: str, soups: list[str]) -> None:
    cases = [Case(f"soup{i}", s, {"x": 1}) for i, s in enumerate(soups)]
    for case, report in run_cases(sandbox, cases):
        assert not problems(case, report, base_print, sandbox), (case.query, report)


PROCEDURES = [
    "CALL show_tables() RETURN *",
    "CALL table_info('Entity') RETURN *",
    "CALL show_indexes() RETURN *",
    "CALL show_connection('MENTIONED_IN') RETURN *",
]


def test_every_allowed_procedure_runs_without_crashing_the_engine(sandbox: Sandbox, base_print: str) -> None:
    results = run_cases(sandbox, [Case(f"procedure{i}", q) for i, q in enumerate(PROCEDURES)])
    assert len(results) == len(PROCEDURES)
    for case, report in results:
        assert not problems(case, report, base_print, sandbox), case.query
        assert isinstance(report, dict)
        assert report["read_only"]["outcome"] == report["writable"]["outcome"] == "ok", report
