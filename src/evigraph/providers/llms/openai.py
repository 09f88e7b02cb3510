"""Any OpenAI-compatible chat completions server: OpenAI, Azure deployments, Ollama, vLLM, llama.cpp.

Servers differ in what they accept (JSON schema output, `stream_options`, `max_tokens` versus
`max_completion_tokens`, a temperature for reasoning models). A request a server refuses for one
of those is sent again without it, and the client remembers, so one setting works everywhere
and the next call pays nothing for the discovery.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from evigraph.errors import ConfigurationError, LLMConfigurationError, LLMError, LLMResponseError, LLMTimeoutError
from evigraph.extras import install_hint
from evigraph.masking import MASK, Secret, mask_credentials, protect_logs, url_secrets
from evigraph.providers.http import RETRY_STATUS, RetryPolicy, error_message, json_object, retry_after
from evigraph.providers.llms.base import LLM, ChatRequest, ChatResult, StreamPart, Usage, estimate_usage
from evigraph.providers.llms.endpoint import Endpoint
from evigraph.providers.llms.failures import Refusal, refusal_error
from evigraph.providers.llms.settings import (
    DEFAULT_BASE_URL,
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    ENV_TIMEOUT,
    OLLAMA_BASE_URL,
    EnvSettings,
)
from evigraph.providers.llms.sse import sse_data

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("evigraph.llm")

JsonSupport = Literal["json_schema", "json_object_schema", "json", "text"]
"""How a server is asked for JSON, strongest first: OpenAI's `json_schema`; `json_object` with the
schema beside it (llama-cpp-python's and Anyscale's form, which llama-cpp-python turns into a
grammar: measured with SmolLM2, the answer then follows the schema); plain `json_object`; none.
A server that refuses one is asked with the next (`_adapt`)."""
_STRENGTH: tuple[JsonSupport, ...] = get_args(JsonSupport)
_HOSTED_HOSTS = ("api.openai.com",)


@dataclass(frozen=True)
class Probe:
    """What a quick look at the server's model list found (`evigraph doctor`)."""

    reachable: bool
    status: int | None = None
    models: tuple[str, ...] | None = None
    """The model ids the server lists, when it lists them."""
    error: str = ""


class OpenAICompatibleLLM(LLM):
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint, over httpx.

    Unset arguments come from the environment (`EVIGRAPH_LLM_BASE_URL`, `EVIGRAPH_LLM_MODEL`,
    `EVIGRAPH_LLM_API_KEY`, `EVIGRAPH_LLM_TIMEOUT`, `EVIGRAPH_LLM_CONCURRENCY`); `api_key=""`
    sends no key. At most `concurrency` requests are in flight at once; 429, 5xx and connection
    failures are retried `max_retries` times with exponential backoff and jitter, honouring the
    server's Retry-After. A timeout is not retried: the same request would take as long again.

    Example::

        async with OpenAICompatibleLLM("qwen2.5:7b", base_url="http://localhost:11434/v1") as llm:
            result = await llm.chat([Message.user("Name three rivers as JSON {rivers: []}")], json_mode=True)
            print(result.data, llm.usage)
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_wait: float = 60.0,
        json_support: JsonSupport = "json_schema",
        stream_usage: bool = True,
        extra_body: Mapping[str, Any] | None = None,
        provider: str = "openai",
    ) -> None:
        env = EnvSettings.read()
        default_url = OLLAMA_BASE_URL if provider == "ollama" else DEFAULT_BASE_URL
        self.endpoint = Endpoint.parse(base_url or env.base_url or default_url)
        self.model = (model or env.model or self.endpoint.deployment or "").strip()
        if not self.model:
            raise LLMConfigurationError(
                f"no LLM model given for {self.endpoint.display}",
                f"set {ENV_MODEL} or pass the model (--llm openai:MODEL), e.g. gpt-4o-mini or qwen2.5:7b",
            )
        key = env.api_key if api_key is None else api_key
        self._key_source = ENV_API_KEY if api_key is None else "api_key= of OpenAICompatibleLLM"
        if not key and self.endpoint.url_key:
            self._key_source = f"the api-key in {ENV_BASE_URL}"
        self._api_key = Secret(key or "")
        self._secrets = tuple(Secret(s) for s in (key, self.endpoint.url_key) if s)
        if not self._secrets and self._hosted():
            raise LLMConfigurationError(
                f"no API key for {self.endpoint.display}", f"set {ENV_API_KEY}, or {ENV_BASE_URL} for a local server"
            )
        # httpx sends the URL's user:password as a Basic header, which a server may echo
        self._masked = (*self._secrets, *(Secret(s) for s in url_secrets(self.endpoint.base_url)))
        protect_logs(*(s.reveal() for s in self._masked))
        self.timeout = float(timeout or env.timeout or DEFAULT_TIMEOUT)
        self.concurrency = int(concurrency or env.concurrency or DEFAULT_CONCURRENCY)
        if self.timeout <= 0 or self.concurrency <= 0 or max_retries < 0:
            raise ConfigurationError(
                "timeout and concurrency must be positive, max_retries not negative", "e.g. timeout=60, concurrency=4"
            )
        self.retry = RetryPolicy(retries=max_retries, backoff=backoff, max_wait=max_wait)
        if json_support not in _STRENGTH:
            raise ConfigurationError(
                f"json_support {json_support!r} is not a way to ask for JSON",
                f"use one of: {', '.join(_STRENGTH)} (strongest first)",
            )
        self.json_support: JsonSupport = json_support
        self.stream_usage = stream_usage
        self.extra_body = dict(extra_body or {})
        self.provider = provider
        self._max_tokens_field = "max_tokens"
        self._send_temperature = True
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None
        self._keeper: AsyncGenerator[None, None] | None = None
        self._slots: asyncio.Semaphore | None = None

    @property
    def spec(self) -> str:
        """The provider and model only: the URL and key come from the environment when rebuilt,
        since a knowledge base must never hold a key (nor a URL that may carry one)."""
        return f"{self.provider}:{self.model}"

    def __repr__(self) -> str:
        key = repr(MASK) if self._secrets else None
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.endpoint.display!r}, api_key={key})"

    def _mask(self, text: str) -> str:
        return mask_credentials(text, (s.reveal() for s in self._masked))

    def _hosted(self) -> bool:
        host = (self.endpoint.base_url.split("//", 1)[-1].split("/", 1)[0]).lower()
        return self.endpoint.azure or host.endswith(_HOSTED_HOSTS)

    # -- connection state --------------------------------------------------------------------

    async def _session(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        """The client and the concurrency slots of the running event loop.

        Both belong to one loop, and `evigraph.sync` runs each call in a loop of its own, so
        they are made again when the loop changes. The client is closed when its loop shuts
        down (see `_closed_with_loop`): pooled connections must not outlive their loop.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._slots is None or self._loop is not loop:
            try:
                import httpx
            except ImportError as exc:  # pragma: no cover - a base dependency
                raise ConfigurationError("httpx is not installed", install_hint("")) from exc
            limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
            timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
            client = httpx.AsyncClient(timeout=timeout, limits=limits)
            keeper = _closed_with_loop(client)
            await anext(keeper)
            self._client, self._keeper = client, keeper
            self._slots, self._loop = asyncio.Semaphore(self.concurrency), loop
        return self._client, self._slots

    async def aclose(self) -> None:
        keeper, loop = self._keeper, self._loop
        self._client, self._keeper, self._slots, self._loop = None, None, None, None
        if keeper is not None and loop is asyncio.get_running_loop():
            await keeper.aclose()  # closes the client; another loop's closed it when it ended

    def _headers(self) -> dict[str, str]:
        """Built per request, so no client object or its repr ever holds the key."""
        key = self._api_key.reveal()
        if not key:
            return {}
        return {"api-key": key} if self.endpoint.azure else {"Authorization": f"Bearer {key}"}

    # -- requests ----------------------------------------------------------------------------

    def _payload(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [m.model_dump() for m in request.messages]}
        if self._send_temperature:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body[self._max_tokens_field] = request.max_tokens
        response_format = self._response_format(request)
        if response_format is not None:
            body["response_format"] = response_format
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        return body

    def _response_format(self, request: ChatRequest) -> dict[str, Any] | None:
        if request.output == "json_schema" and self.json_support == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": request.schema_name, "schema": request.json_schema}}
        if request.output == "json_schema" and self.json_support == "json_object_schema":
            return {"type": "json_object", "schema": request.json_schema}
        if request.output != "text" and self.json_support != "text":
            return {"type": "json_object"}
        return None

    def _adapt(self, refusal: Refusal, payload: dict[str, Any]) -> bool:
        """Drops what the server just refused, for this and later calls; False: nothing to drop."""
        text = refusal.message.lower()
        if "stream_options" in payload and refusal.rejects_stream_options:
            self.stream_usage = False
        elif "response_format" in payload and refusal.rejects_json_format:
            self._weaken_json(payload["response_format"])
        elif "max_tokens" in payload and "max_completion_tokens" in text:
            self._max_tokens_field = "max_completion_tokens"
        elif "temperature" in payload and "temperature" in text and refusal.invalid_request:
            self._send_temperature = False
        else:
            return False
        log.info(self._mask(f"{self.endpoint.display} refused part of a request, sent again without it: {text}"))
        return True

    def _weaken_json(self, refused: dict[str, Any]) -> None:
        """One step below the form the server refused, never below what is asked already: calls
        in flight together, all refused the same form, must not take one step each."""
        sent: JsonSupport = (
            "json_schema"
            if refused.get("type") == "json_schema"
            else "json_object_schema"
            if "schema" in refused
            else "json"
        )
        weaker = _STRENGTH[min(_STRENGTH.index(sent) + 1, len(_STRENGTH) - 1)]
        if _STRENGTH.index(weaker) > _STRENGTH.index(self.json_support):
            self.json_support = weaker

    async def _send(self, payload: Callable[[], dict[str, Any]], *, stream: bool) -> httpx.Response:
        """The server's successful response to one call, after retries; the caller holds a slot
        and, when streaming, closes the response."""
        import httpx

        client, _ = await self._session()
        attempt = 0
        where = self.endpoint.display
        while True:
            body = payload()
            log.debug("POST %s model=%s attempt=%d", self._mask(self.endpoint.chat_url), self.model, attempt + 1)
            try:
                request = client.build_request("POST", self.endpoint.chat_url, json=body, headers=self._headers())
                response = await client.send(request, stream=stream)
            except httpx.TimeoutException as exc:
                if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
                    delay = self.retry.delay(attempt)
                    if delay is not None:
                        attempt = await self._pause(attempt, delay, f"no connection ({type(exc).__name__})")
                        continue
                raise self._timeout_error() from None
            except httpx.TransportError as exc:
                delay = self.retry.delay(attempt)
                if delay is not None:
                    attempt = await self._pause(attempt, delay, f"cannot connect ({type(exc).__name__})")
                    continue
                detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                failure = self._mask(f"after {attempt + 1} attempts ({detail})")
                if isinstance(exc, httpx.ConnectError):  # nothing listens there: every call would fail alike
                    raise LLMConfigurationError(
                        f"cannot reach {where} {failure}", f"check {ENV_BASE_URL} and that the server is running"
                    ) from None
                raise LLMError(
                    f"the connection to {where} failed {failure}", "retry; if it persists, check the server's log"
                ) from None
            if response.status_code < 400:
                return response
            text = (await response.aread()).decode("utf-8", "replace")
            await response.aclose()
            refusal = Refusal.read(response.status_code, text)
            wait = retry_after(response.headers)
            if response.status_code in RETRY_STATUS and not (refusal.out_of_quota or refusal.invalid_request):
                delay = self.retry.delay(attempt, wait)
                if delay is not None:
                    attempt = await self._pause(attempt, delay, f"HTTP {response.status_code}")
                    continue
            elif self._adapt(refusal, body) and payload() != body:  # else the same request again, forever
                continue
            raise self._refusal_error(refusal, attempt + 1, wait)

    async def _pause(self, attempt: int, delay: float, why: str) -> int:
        total = self.retry.retries + 1
        log.info("%s: %s, retrying in %.1f s (attempt %d of %d)", self.endpoint.display, why, delay, attempt + 2, total)
        await asyncio.sleep(delay)
        return attempt + 1

    def _refusal_error(self, refusal: Refusal, attempts: int, wait: float | None) -> LLMError:
        error = refusal_error(
            refusal,
            where=self.endpoint.display,
            model=self.model,
            models_url=self._mask(self.endpoint.models_url),
            key_set=bool(self._secrets),
            key_source=self._key_source,
            attempts=attempts,
            wait=wait if wait is not None and wait > self.retry.max_wait else None,
        )
        error.message = self._mask(error.message)
        error.args = (error.message,)
        return error

    def _timeout_error(self) -> LLMTimeoutError:
        return LLMTimeoutError(
            f"{self.model} at {self.endpoint.display} did not answer within {self.timeout:g} s",
            f"raise the timeout ({ENV_TIMEOUT}, or timeout=), send less per call, or use a faster model",
        )

    # -- answers -----------------------------------------------------------------------------

    async def _complete(self, request: ChatRequest) -> ChatResult:
        _, slots = await self._session()
        async with slots:
            response = await self._send(lambda: self._payload(request, stream=False), stream=False)
        return self._completion(response.text, request)

    def _completion(self, text: str, request: ChatRequest) -> ChatResult:
        body = self._json_body(text)
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMResponseError(
                self._mask(f"{self.endpoint.display} answered without choices: {error_message(text)}"),
                "check that the server implements the OpenAI chat completions API",
            )
        message = choices[0].get("message") or {}
        answer = _content(message.get("content") if isinstance(message, dict) else None)
        usage = _usage(body.get("usage")) or estimate_usage(request, answer)
        model = str(body.get("model") or self.model)
        return ChatResult(text=answer, usage=usage, model=model, finish_reason=choices[0].get("finish_reason"))

    def _json_body(self, text: str) -> dict[str, Any]:
        body = json_object(text)
        if body is None:
            raise LLMResponseError(
                self._mask(f"{self.endpoint.display} did not answer with JSON: {error_message(text, 120)}"),
                f"check {ENV_BASE_URL}: the server's API root, which usually ends with /v1",
            )
        if "error" in body and "choices" not in body:  # some servers report failures with HTTP 200
            raise LLMError(
                self._mask(f"{self.endpoint.display} failed: {error_message(text)}"),
                "retry later; if it persists, check the server's log",
            )
        return body

    async def _stream(self, request: ChatRequest) -> AsyncGenerator[StreamPart, None]:
        import httpx

        _, slots = await self._session()
        async with slots:
            response = await self._send(lambda: self._payload(request, stream=True), stream=True)
            finished = False
            try:
                if "text/event-stream" not in response.headers.get("content-type", "text/event-stream"):
                    # A server that ignored `stream: true` answered all at once.
                    result = self._completion((await response.aread()).decode("utf-8", "replace"), request)
                    yield StreamPart(text=result.text, usage=result.usage, finish_reason=result.finish_reason)
                    return
                async for data in sse_data(response.aiter_lines()):
                    if data.strip() == "[DONE]":
                        finished = True
                        break
                    part = self._stream_part(data)
                    finished = finished or part.finish_reason is not None
                    yield part
            except httpx.TimeoutException:
                raise self._timeout_error() from None
            except httpx.TransportError as exc:
                raise LLMError(
                    self._mask(f"the answer from {self.endpoint.display} broke off ({type(exc).__name__})"),
                    "retry; if it persists, check the server's log",
                ) from None
            finally:
                await response.aclose()
        if not finished:
            raise LLMResponseError(
                f"the answer from {self.endpoint.display} ended before the model finished",
                "retry; if it persists, check the server's log",
            )

    def _stream_part(self, data: str) -> StreamPart:
        chunk = json_object(data)
        if chunk is None:
            raise LLMResponseError(
                self._mask(f"{self.endpoint.display} sent a malformed stream event: {data[:80]!r}"),
                "check that the server implements OpenAI chat streaming",
            )
        if chunk.get("error"):
            raise LLMError(
                self._mask(f"{self.endpoint.display} failed mid-answer: {error_message(data)}"),
                "retry; if it persists, check the server's log",
            )
        choices = chunk.get("choices") or []
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        delta = first.get("delta") or {}
        return StreamPart(
            text=_content(delta.get("content") if isinstance(delta, dict) else None),
            usage=_usage(chunk.get("usage")),
            finish_reason=first.get("finish_reason"),
            model=chunk.get("model") or None,
        )

    # -- diagnosis ---------------------------------------------------------------------------

    def probe(self, timeout: float = 3.0) -> Probe:
        """Asks the server for its model list, blocking, within `timeout` (for `evigraph doctor`)."""
        import httpx

        try:
            with httpx.Client(timeout=timeout) as client:
                response = client.get(self.endpoint.models_url, headers=self._headers())
        except httpx.HTTPError as exc:
            return Probe(reachable=False, error=self._mask(f"{type(exc).__name__}: {exc}".rstrip(": ")))
        if response.status_code >= 400:
            return Probe(reachable=True, status=response.status_code, error=self._mask(error_message(response.text)))
        try:
            listed = response.json().get("data")
            models = tuple(str(m["id"]) for m in listed if isinstance(m, dict) and "id" in m)
        except (ValueError, AttributeError, TypeError):
            models = None
        return Probe(reachable=True, status=response.status_code, models=models)


async def _closed_with_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Closes `client` when the loop it was first used in shuts down.

    `asyncio.run` (and pytest's loops) finalize every async generator still open before closing
    the loop, so the client's connections are closed while their loop can still run the close.
    """
    try:
        yield
    finally:
        await client.aclose()


def _content(content: Any) -> str:
    """Message text; some servers send a list of parts (`[{"type": "text", "text": ...}]`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage(raw: Any) -> Usage | None:
    """A server's usage block (`prompt_tokens`/`completion_tokens`, or `input_`/`output_tokens`)."""
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens", raw.get("input_tokens"))
    completion = raw.get("completion_tokens", raw.get("output_tokens"))
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(input_tokens=prompt, output_tokens=completion, calls=1)
