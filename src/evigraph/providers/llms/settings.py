"""The environment an LLM is configured from, in one place for the client, the registry and doctor."""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV_BASE_URL = "EVIGRAPH_LLM_BASE_URL"
ENV_MODEL = "EVIGRAPH_LLM_MODEL"
ENV_API_KEY = "EVIGRAPH_LLM_API_KEY"
ENV_TIMEOUT = "EVIGRAPH_LLM_TIMEOUT"
ENV_CONCURRENCY = "EVIGRAPH_LLM_CONCURRENCY"

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
DEFAULT_TIMEOUT = 120.0
"""Seconds to wait for an answer: local models on a CPU take a minute for a long extraction."""
DEFAULT_CONCURRENCY = 4


@dataclass(frozen=True)
class EnvSettings:
    """What the environment says; empty strings and unset variables are both "not set"."""

    base_url: str | None
    model: str | None
    api_key: str | None
    timeout: float | None
    concurrency: int | None

    @classmethod
    def read(cls) -> EnvSettings:
        from evigraph.errors import ConfigurationError

        def number(name: str, kind: type[float] | type[int]) -> float | int | None:
            raw = _get(name)
            if raw is None:
                return None
            try:
                value = kind(raw)
            except ValueError:
                value = 0
            if value <= 0:
                raise ConfigurationError(f"{name}={raw!r} is not a positive number", f"unset it or give e.g. {name}=30")
            return value

        timeout = number(ENV_TIMEOUT, float)
        concurrency = number(ENV_CONCURRENCY, int)
        return cls(
            base_url=_get(ENV_BASE_URL),
            model=_get(ENV_MODEL),
            api_key=_get(ENV_API_KEY),
            timeout=None if timeout is None else float(timeout),
            concurrency=None if concurrency is None else int(concurrency),
        )


def _get(name: str) -> str | None:
    return os.environ.get(name, "").strip() or None
