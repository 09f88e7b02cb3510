"""Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, a local server)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.masking import mask_credentials, protect_logs, url_secrets
from evigraph.providers.embedders.base import Embedder, _chunks, _normalise
from evigraph.providers.http import RETRY_STATUS, RetryPolicy, error_message, is_local_url, retry_after

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible `/embeddings` endpoint: OpenAI, Azure-style proxies, vLLM, Ollama, TEI.

    Local servers usually need no key, so a missing key is only an error for remote hosts.
    Vectors are normalised here because not every server does.
    """

    retries = 2
    backoff = 0.5  # seconds before the first retry; doubles each time (with jitter)
    max_wait = 30.0  # a longer Retry-After is not waited for: the call fails saying so

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dimension: int | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.name = model
        self.base_url = (base_url or os.environ.get("EVIGRAPH_EMBED_BASE_URL") or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        self.endpoint = f"{self.base_url}/embeddings"
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout = timeout
        self._dimension = dimension
        self._api_key = os.environ.get(api_key_env) or None
        self._url_secrets = url_secrets(self.base_url)  # httpx sends them as a Basic header, a server may echo it
        if self._api_key is None and not is_local_url(self.base_url):
            raise ConfigurationError(
                f"no API key for {self._mask(self.endpoint)}: environment variable {api_key_env} is not set",
                f"export {api_key_env}=<your key>, or name another variable with EVIGRAPH_EMBED_API_KEY_ENV",
            )
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """Learned from the endpoint when not given, since few servers document it."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = value

    def _http(self) -> Any:
        with self._client_lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError as exc:
                    raise ConfigurationError("httpx is not installed", install_hint("embed-remote")) from exc
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                protect_logs(*((self._api_key,) if self._api_key else ()), *self._url_secrets)
                self._client = httpx.Client(timeout=self.timeout, headers=headers)
            return self._client

    def _mask(self, text: str) -> str:
        """Servers echo a rejected key in their message; it must not reach logs or terminals."""
        return mask_credentials(text, (*((self._api_key,) if self._api_key else ()), *self._url_secrets))

    @property
    def spec(self) -> str:
        """The model only: the endpoint comes from EVIGRAPH_EMBED_BASE_URL and the key from its
        variable when the embedder is rebuilt, since a key is never written to the database."""
        return f"openai:{self.model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in _chunks(texts, self.batch_size):
            vectors.extend(self._embed_batch(batch))
        return vectors

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        # OpenAI rejects empty strings; a space embeds as "no content" just the same.
        payload = {"model": self.model, "input": [t if t else " " for t in texts], "encoding_format": "float"}
        body = self._post(payload)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            got = len(data) if isinstance(data, list) else "no"
            raise ConfigurationError(
                f"{self.endpoint} returned {got} embeddings for {len(texts)} inputs",
                "check that the endpoint implements the OpenAI embeddings API",
            )
        try:
            ordered = sorted(data, key=lambda item: int(item["index"]))
            vectors = [_normalise(item["embedding"]) for item in ordered]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{self.endpoint} returned a malformed embeddings response",
                "the endpoint must return data[].embedding as float lists (encoding_format=float)",
            ) from exc
        sizes = {len(v) for v in vectors}
        if self._dimension is None and len(sizes) == 1:
            self._dimension = next(iter(sizes))
        if any(len(v) != self._dimension for v in vectors):
            raise ConfigurationError(
                f"{self.model} returned vectors of size {sorted(sizes)}, expected {self._dimension}",
                "set dimension to the model's real output size",
            )
        return vectors

    def _post(self, payload: dict[str, Any]) -> Any:
        import httpx

        client = self._http()
        policy = RetryPolicy(retries=self.retries, backoff=self.backoff, max_wait=self.max_wait)
        attempt = 0
        while True:
            try:
                response = client.post(self.endpoint, json=payload)
            except httpx.TransportError as exc:
                delay = policy.delay(attempt)
                if delay is None:
                    raise ConfigurationError(
                        self._mask(f"cannot reach {self.endpoint}: {type(exc).__name__}: {exc}"),
                        "check EVIGRAPH_EMBED_BASE_URL and that the server is running",
                    ) from None
                time.sleep(delay)
                attempt += 1
                continue
            if response.status_code in RETRY_STATUS:
                delay = policy.delay(attempt, retry_after(response.headers))
                if delay is not None:
                    time.sleep(delay)
                    attempt += 1
                    continue
            if response.status_code >= 400:
                raise ConfigurationError(
                    self._mask(f"{self.endpoint} answered HTTP {response.status_code}: {error_message(response.text)}"),
                    self._hint_for(response.status_code),
                )
            try:
                return response.json()
            except ValueError:
                raise ConfigurationError(
                    self._mask(f"{self.endpoint} did not return JSON"), "check that base_url ends with /v1"
                ) from None

    def _hint_for(self, status: int) -> str:
        if status in (401, 403):
            return f"check the API key in {self.api_key_env}"
        if status == 404:
            return "check the base URL (usually ends with /v1) and the model name"
        return "check the model name and the endpoint's limits"

    def close(self) -> None:
        """Closes the HTTP connection pool; the embedder reopens it if used again."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None
