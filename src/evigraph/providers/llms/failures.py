"""Turning a server's refusal into one line that names the fix.

Servers differ in how they say "no such model" (Ollama: `model "x" not found, try pulling it
first`; vLLM: `The model `x` does not exist`; OpenAI: code `model_not_found`), so the cause is
read from the status, the error code and the message together. Errors that every later call
would repeat (key, model, URL, quota) are `LLMConfigurationError`, so a caller stops the batch
instead of failing each document the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from evigraph.errors import LLMConfigurationError, LLMError
from evigraph.providers.http import error_code, error_message
from evigraph.providers.llms.settings import ENV_BASE_URL, ENV_CONCURRENCY, ENV_MODEL

_MODEL_MISSING = ("not found", "does not exist", "not exist", "unknown model", "no such model", "invalid model")
_TOO_LONG = ("context length", "context_length", "maximum context", "context window", "too many tokens", "too long")
_UNSUPPORTED = ("response_format", "json_schema", "json_object", "structured output", "guided")
_VALIDATION = ("validation error", "literal_error", "input should be")


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer, read once."""

    status: int
    message: str
    code: str

    @classmethod
    def read(cls, status: int, body: str) -> Refusal:
        return cls(status=status, message=error_message(body), code=error_code(body).lower())

    @property
    def model_missing(self) -> bool:
        if self.code == "model_not_found":
            return True
        text = self.message.lower()
        return self.status in (400, 404) and "model" in text and any(s in text for s in _MODEL_MISSING)

    @property
    def invalid_request(self) -> bool:
        """The server refused the request itself, which sending it again would not change.
        llama-cpp-python's server says so with HTTP 500 and its request validation's message
        ("1 validation error ... literal_error ... response_format"): no passing fault to retry."""
        if self.status == 500:
            return any(s in self.message.lower() for s in _VALIDATION)
        return self.status in (400, 422)

    @property
    def rejects_json_format(self) -> bool:
        """A server without JSON mode (or without json_schema) saying so."""
        text = self.message.lower()
        return (self.invalid_request or self.status == 501) and any(s in text for s in _UNSUPPORTED)

    @property
    def rejects_stream_options(self) -> bool:
        return self.invalid_request and "stream_options" in self.message.lower()

    @property
    def out_of_quota(self) -> bool:
        """OpenAI answers 429 `insufficient_quota` for an account out of credit: no wait helps."""
        return self.code == "insufficient_quota"


def refusal_error(
    refusal: Refusal,
    *,
    where: str,
    model: str,
    models_url: str,
    key_set: bool,
    key_source: str,
    attempts: int,
    wait: float | None = None,
) -> LLMError:
    """The error for `refusal`; `where` is the (masked) URL, `attempts` how many were made."""
    status, message = refusal.status, refusal.message
    tried = f" after {attempts} attempts" if attempts > 1 else ""
    if status in (401, 403):
        hint = f"check {key_source}" if key_set else f"the server wants an API key: set {key_source}"
        if status == 403:
            hint += f", and that the key may use model {model!r}"
        return LLMConfigurationError(f"{where} refused the API key (HTTP {status}): {message}", hint, status=status)
    if refusal.model_missing:
        return LLMConfigurationError(
            f"model {model!r} not found at {where} (HTTP {status}): {message}",
            f"check the model name ({ENV_MODEL}); GET {models_url} lists the server's models "
            f"(for Ollama: `ollama pull {model}`)",
            status=status,
        )
    if status == 404:
        return LLMConfigurationError(
            f"{where} has no chat completions endpoint (HTTP 404): {message}",
            f"check {ENV_BASE_URL}: the server's API root, which usually ends with /v1",
            status=status,
        )
    if refusal.out_of_quota:
        return LLMConfigurationError(
            f"{where} refused: quota exceeded (HTTP 429): {message}", "check the account's plan and billing", status=429
        )
    if status == 429:
        waited = f"; it asks to wait {wait:.0f} s" if wait is not None else ""
        return LLMError(
            f"{where} is rate limiting (HTTP 429){tried}{waited}: {message}",
            f"lower the concurrency ({ENV_CONCURRENCY}, or concurrency=) or retry later",
            status=429,
        )
    if status >= 500 or status == 408:
        return LLMError(
            f"{where} failed with HTTP {status}{tried}: {message}",
            "retry later; if it persists, check the server's log",
            status=status,
        )
    if any(s in message.lower() for s in _TOO_LONG):
        return LLMError(
            f"{model} cannot take this input (HTTP {status}): {message}",
            "send less per call (smaller chunks or batches), or use a model with a longer context",
            status=status,
        )
    return LLMError(
        f"{where} rejected the request (HTTP {status}): {message}",
        f"check that model {model!r} supports chat completions with these options",
        status=status,
    )
