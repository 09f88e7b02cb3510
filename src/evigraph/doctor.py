"""`evigraph doctor`: what this installation can do, and the command that adds what it cannot.

A new user meets optional features one failure at a time (no spaCy model, no embedder library,
an MCP client that cannot start the server). One look answers all of it up front. Every check
only asks the import system or the environment: nothing is loaded or downloaded, so the report
is instant and works offline. The one exception is a configured LLM: its server is asked for its
model list (a few seconds at most), since "configured" says nothing of a wrong URL, key or model.

The checks come from the registries where they exist (extractors, embedders, loaders, engines),
so a strategy registered later is diagnosed without a change here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from evigraph.errors import ConfigurationError
from evigraph.extras import TORCH_CPU_INDEX, has_nvidia_gpu, install_hint, provides

if TYPE_CHECKING:
    from evigraph.providers.llms import OpenAICompatibleLLM

Area = Literal["engine", "extractor", "embedder", "mcp", "api", "code", "llm", "server", "ui-tests", "command"]


class Check(BaseModel):
    """One feature: whether it is usable here, and if not, the one line that fixes it."""

    area: Area
    name: str
    ok: bool
    detail: str = ""
    hint: str = ""


class DoctorReport(BaseModel):
    python: str
    checks: list[Check]

    @property
    def missing(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


def doctor() -> DoctorReport:
    """Every check, in the order a new user meets them."""
    return DoctorReport(python=sys.version.split()[0], checks=list(_checks()))


def _checks() -> Iterator[Check]:
    yield from _engines()
    yield from _registry_checks("extractor")
    yield from _registry_checks("embedder")
    if (torch := _torch()) is not None:
        yield torch
    yield _module("mcp", "mcp", "MCP server (evigraph mcp)", "mcp", extra="")
    yield _module("api", "uvicorn", "REST API and web UI server (evigraph serve)", "uvicorn", extra="")
    yield from _code_grammars()
    yield _llm()
    yield _module("server", "falkordb", "FalkorDB client (falkordb:// knowledge bases)", "falkordb", extra="falkordb")
    yield _module("ui-tests", "playwright", "browser automation for the web UI tests", "playwright", extra="ui")
    yield _command()


def _engines() -> Iterator[Check]:
    yield _module("engine", "ladybug", "embedded graph engine, LadybugDB (default)", "ladybug", extra="")
    yield _module("engine", "kuzu", "Kuzu engine, for files it wrote (--engine kuzu)", "kuzu", extra="kuzu")
    yield _module("engine", "stemmer", "Porter stemmer of full-text search (PyStemmer)", "Stemmer", extra="")


def _registry_checks(kind: Literal["extractor", "embedder"]) -> Iterator[Check]:
    if kind == "extractor":
        from evigraph.ingest.extraction import EXTRACTORS as registry
    else:
        from evigraph.providers.embedders import EMBEDDERS as registry  # type: ignore[assignment]
    for entry in registry:
        if entry.name in ("auto", "none"):
            continue
        try:
            if entry.check is not None:
                entry.check()
        except ConfigurationError as exc:
            yield Check(area=kind, name=entry.form, ok=False, detail=exc.message, hint=exc.hint or "")
        else:
            yield Check(area=kind, name=entry.form, ok=True, detail=entry.description)


def _torch() -> Check | None:
    """Whether an installed torch fits the machine: PyPI's Linux wheel is the CUDA build, whose
    libraries (about 2.8 GB, the `nvidia-*` packages) only an NVIDIA GPU uses. Read from the
    installed packages, so torch is never imported here."""
    from importlib import metadata

    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    cuda = sorted(
        name
        for dist in metadata.distributions()
        if (name := (dist.metadata["Name"] or "")).lower().startswith("nvidia-")
    )
    if not cuda or has_nvidia_gpu():
        return Check(area="embedder", name="torch", ok=True, detail=f"torch {version} fits this machine")
    return Check(
        area="embedder",
        name="torch",
        ok=False,
        detail=f"torch {version} is the CUDA build ({len(cuda)} nvidia-* packages) on a machine without an NVIDIA GPU",
        hint=f"pip uninstall -y torch {' '.join(cuda)} && pip install torch --index-url {TORCH_CPU_INDEX}",
    )


def _module(area: Area, name: str, what: str, module: str, *, extra: str) -> Check:
    """`extra` "" marks a base dependency: missing, the installation is broken."""
    if importlib.util.find_spec(module) is not None:
        return Check(area=area, name=name, ok=True, detail=what)
    if extra and not provides(extra):
        return Check(area=area, name=name, ok=False, detail=f"{what}: not part of this release")
    hint = install_hint(extra) if extra else f"reinstall evigraph: {install_hint('')}"
    return Check(area=area, name=name, ok=False, detail=f"{what}: not installed", hint=hint)


def _code_grammars() -> Iterator[Check]:
    """tree-sitter and one line per grammar `evigraph ingest-code` reads non-Python files with
    (Python needs none), named by the languages it covers, from the table the ingest loads them by."""
    from evigraph.ingest.code.grammars import grammar_modules

    yield _module("code", "tree-sitter", "parser for code ingest beyond Python", "tree_sitter", extra="code")
    for module, languages in grammar_modules().items():
        what = f"code ingest of {', '.join(languages)} ({module})"
        yield _module("code", ", ".join(languages), what, module, extra="code")


LLM_PROBE_TIMEOUT = 3.0


def _llm() -> Check:
    """Whether an LLM is configured (EVIGRAPH_LLM_MODEL and friends) and, if so, whether its
    server answers with the key and lists the model."""
    from evigraph.providers.llms import OpenAICompatibleLLM, llm_from_env

    try:
        llm = llm_from_env()
    except ConfigurationError as exc:
        return Check(area="llm", name="llm", ok=False, detail=exc.message, hint=exc.hint)
    if llm is None:
        return Check(
            area="llm",
            name="llm",
            ok=False,
            detail="no LLM configured (extraction and search work without one)",
            hint="set EVIGRAPH_LLM_MODEL and EVIGRAPH_LLM_BASE_URL (and EVIGRAPH_LLM_API_KEY for a hosted API)",
        )
    name = llm.spec or "llm"
    if not isinstance(llm, OpenAICompatibleLLM):  # pragma: no cover - the environment builds only this one
        return Check(area="llm", name=name, ok=True, detail=f"{llm.model} (not contacted)")
    return _probed(llm, name)


def _probed(llm: OpenAICompatibleLLM, name: str) -> Check:
    where = f"{llm.model} at {llm.endpoint.display}"

    def seen(ok: bool, detail: str, hint: str = "") -> Check:
        """What the probe showed, said of this model at this endpoint."""
        return Check(area="llm", name=name, ok=ok, detail=f"{where}: {detail}", hint=hint)

    probe = llm.probe(timeout=LLM_PROBE_TIMEOUT)
    if not probe.reachable:
        return seen(
            False,
            f"not reachable ({probe.error})",
            "check EVIGRAPH_LLM_BASE_URL and that the server is running",
        )
    if probe.status in (401, 403):
        return seen(
            False,
            f"the API key was refused (HTTP {probe.status}: {probe.error})",
            "check EVIGRAPH_LLM_API_KEY",
        )
    if probe.status is not None and probe.status >= 400:
        return seen(True, f"reachable (no model list: HTTP {probe.status})")
    listed = probe.models or ()
    if listed and not llm.endpoint.azure and llm.model not in listed and f"{llm.model}:latest" not in listed:
        shown = ", ".join(listed[:5]) + (", ..." if len(listed) > 5 else "")
        return seen(
            False,
            f"reachable, but the server does not list this model (it lists {shown})",
            _unlisted_fix(llm.model, listed),
        )
    return seen(True, "reachable")


def _unlisted_fix(model: str, listed: Sequence[str]) -> str:
    """A server of one model (llama.cpp's, llama-cpp-python's) lists its file's path and answers
    whatever model is asked, so the fix is to name it the same on both sides; Ollama serves many
    and must have pulled the one asked for."""
    if len(listed) == 1 and ("/" in listed[0] or listed[0].endswith(".gguf")):
        return (
            f"set EVIGRAPH_LLM_MODEL={listed[0]}, or start the server with the model's name: "
            f"`llama-server --alias {model}` or `python -m llama_cpp.server --model_alias {model}`"
        )
    return f"check EVIGRAPH_LLM_MODEL (for Ollama: `ollama pull {model}`)"


def _command() -> Check:
    """The absolute path an IDE's MCP config should name: an IDE does not see this shell's PATH."""
    here = shutil.which("evigraph") or os.path.join(os.path.dirname(sys.executable), "evigraph")
    if os.path.exists(here):
        return Check(area="command", name="evigraph", ok=True, detail=os.path.abspath(here))
    return Check(
        area="command",
        name="evigraph",
        ok=False,
        detail="the evigraph command is not on PATH",
        hint=f"use `{sys.executable} -m evigraph` in MCP client configs",
    )
