"""The LLM contract: chat with optional JSON output, streaming, and token accounting.

Everything that asks a model something (extraction, resolution, cited answers, contextual
chunks) goes through `LLM`, so JSON handling, usage counts and error types are the same for
every provider and every caller. A provider implements `_complete` (and `_stream` when it can
stream); `chat` and `stream` validate the request, parse JSON and count usage around it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evigraph.errors import ConfigurationError, LLMError, LLMResponseError, LLMTimeoutError
from evigraph.providers.llms.jsontext import parse_json_text

M = TypeVar("M", bound=BaseModel)
Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    """One turn of a chat."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str) -> Message:
        return cls(role="assistant", content=content)


class Usage(BaseModel):
    """Tokens spent: per call in a result, and as a running total on the LLM.

    Immutable and additive, so a caller accounts for its own calls by summing their results'
    usage even while other tasks share the same LLM.
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    """Chat calls sent, failed ones included (the retries of one call count once)."""
    failed_calls: int = 0
    """Calls that gave no usable answer: refused, timed out, or answered with malformed JSON."""
    estimated_calls: int = 0
    """Calls whose server reported no usage, counted here with a tokenizer instead."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            calls=self.calls + other.calls,
            failed_calls=self.failed_calls + other.failed_calls,
            estimated_calls=self.estimated_calls + other.estimated_calls,
        )


class ChatRequest(BaseModel):
    """A validated chat call, as a provider receives it."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1)
    output: Literal["text", "json", "json_schema"] = "text"
    """`json`: any JSON object; `json_schema`: JSON following `json_schema`."""
    json_schema: dict[str, Any] | None = None
    schema_name: str = "response"
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)


class ChatResult(BaseModel):
    """What a chat call returned."""

    text: str
    data: Any = None
    """The parsed JSON value when JSON was asked for, else None."""
    usage: Usage = Usage()
    model: str = ""
    """The model that answered, as the server named it."""
    finish_reason: str | None = None
    """"stop", or "length" when `max_tokens` cut the answer off."""

    def parse(self, schema: type[M]) -> M:
        """`data` validated as `schema`; a mismatch is an `LLMResponseError` naming the first problems."""
        try:
            return schema.model_validate(self.data)
        except ValidationError as exc:
            raise _shape_error(self.model, schema.__name__, exc) from None


class StreamPart(BaseModel):
    """One piece of a streamed answer: a text delta, and at the end the usage and finish reason."""

    text: str = ""
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None


class AsyncClosing:
    """Leaving `async with` calls `aclose`, however the block ends, so what the object holds (a
    connection, a stream's slot) is released: the LLM clients and their streams share it."""

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class LLM(AsyncClosing, ABC):
    """A chat model.

    Example::

        class EchoLLM(LLM):
            model = "echo"

            async def _complete(self, request):
                return ChatResult(text=request.messages[-1].content, usage=Usage(calls=1))

        result = await EchoLLM().chat([Message.user('{"ok": true}')], json_mode=True)
        assert result.data == {"ok": True}
    """

    model: str
    _usage: Usage = Usage()

    @property
    def spec(self) -> str | None:
        """The `LLMS` spec that builds this LLM again (`openai:<model>`), or None when evigraph
        cannot rebuild it by name. A knowledge base records it (never a key or a URL's secrets),
        so later sessions use the same model without being told."""
        return None

    @property
    def usage(self) -> Usage:
        """Everything this LLM has spent since it was made."""
        return self._usage

    async def chat(
        self,
        messages: Sequence[Message | Mapping[str, str]],
        *,
        json_schema: Mapping[str, Any] | type[BaseModel] | None = None,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatResult:
        """The model's answer to `messages`.

        `json_mode` asks for a JSON object and `json_schema` (a JSON Schema, or a pydantic model
        whose schema is sent and which the answer is validated against) for JSON of that shape;
        `result.data` then holds the parsed value. The JSON is found even when the server has
        no JSON mode and the model wraps it in prose; none at all is an `LLMResponseError`.
        Some servers want the word "JSON" in the prompt when JSON is asked for.
        """
        request = self._request(messages, json_schema, json_mode, max_tokens, temperature)
        try:
            result = await self._complete(request)
        except LLMError as exc:
            self._count(failed_usage(exc, estimate_usage(request, "").input_tokens))
            raise
        if request.output == "text":
            self._count(result.usage)
            return result
        try:
            result = result.model_copy(update={"data": self._parse_json(result)})
            if isinstance(json_schema, type):
                result.parse(json_schema)
        except LLMResponseError as exc:
            exc.input_tokens, exc.output_tokens = result.usage.input_tokens, result.usage.output_tokens
            self._count(result.usage + Usage(failed_calls=1))
            raise
        self._count(result.usage)
        return result

    def stream(
        self,
        messages: Sequence[Message | Mapping[str, str]],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatStream:
        """The answer as it is written: iterate for text deltas, then read `result`.

        Use it as `async with llm.stream(...) as s: async for delta in s: ...`, so a loop left
        early still releases the connection and its slot under the concurrency limit.
        """
        request = self._request(messages, None, False, max_tokens, temperature)
        return ChatStream(self._stream(request), request=request, model=self.model, on_done=self._count)

    @abstractmethod
    async def _complete(self, request: ChatRequest) -> ChatResult:
        """The answer to `request`, with its usage (`calls=1`); JSON is parsed by `chat`."""

    async def _stream(self, request: ChatRequest) -> AsyncGenerator[StreamPart, None]:
        """Parts of the answer as they come; by default the whole answer as one part."""
        result = await self._complete(request)
        yield StreamPart(text=result.text, usage=result.usage, finish_reason=result.finish_reason, model=result.model)

    def _mask(self, text: str) -> str:
        """Text bound for an error or a log with this provider's secrets removed."""
        return text

    def _count(self, usage: Usage) -> None:
        self._usage = self._usage + usage

    async def aclose(self) -> None:
        """Releases connections; the LLM opens them again if used after."""
        return None

    # -- helpers -----------------------------------------------------------------------------

    def _request(
        self,
        messages: Sequence[Message | Mapping[str, str]],
        json_schema: Mapping[str, Any] | type[BaseModel] | None,
        json_mode: bool,
        max_tokens: int | None,
        temperature: float,
    ) -> ChatRequest:
        schema: dict[str, Any] | None = None
        name = "response"
        if isinstance(json_schema, type) and issubclass(json_schema, BaseModel):
            schema, name = json_schema.model_json_schema(), json_schema.__name__
        elif json_schema is not None:
            schema = dict(json_schema)
            name = str(schema.get("title") or name)
        output: Literal["text", "json", "json_schema"] = "json_schema" if schema else "json" if json_mode else "text"
        try:
            return ChatRequest(
                messages=tuple(m if isinstance(m, Message) else Message.model_validate(m) for m in messages),
                output=output,
                json_schema=schema,
                schema_name=_schema_name(name),
                max_tokens=max_tokens,
                temperature=temperature,
            )
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"]) or "request"
            raise ConfigurationError(
                f"invalid chat request: {where}: {problem['msg']}",
                "pass at least one message {role: system|user|assistant, content}, max_tokens > 0, temperature 0-2",
            ) from None

    def _parse_json(self, result: ChatResult) -> Any:
        try:
            return parse_json_text(result.text)
        except json.JSONDecodeError as exc:
            cut = result.finish_reason == "length"
            begins = result.text.strip()[:80]
            raise LLMResponseError(
                self._mask(
                    f"{result.model or self.model} returned malformed JSON ({exc.msg} at line {exc.lineno} "
                    f"column {exc.colno}{', the answer was cut off at max_tokens' if cut else ''}); "
                    f"it begins {begins!r}"
                ),
                "raise max_tokens, or ask for less per call"
                if cut
                else "use a model that follows JSON instructions (a larger one, or a server with JSON mode)",
            ) from None


class TextStream(AsyncClosing, ABC):
    """Text deltas read with `async for`, closed by leaving `async with` (or `aclose`), so a
    reader that stops early always releases what the stream holds (a connection, a slot)."""

    def __aiter__(self) -> Self:
        return self

    @abstractmethod
    async def __anext__(self) -> str: ...

    @abstractmethod
    async def aclose(self) -> None: ...


class ChatStream(TextStream):
    """A streamed answer: text deltas as they arrive, `result` (text, usage) once it ends.

    Usage is added to the LLM's total when the stream ends, is closed, or fails; a stream left
    early is counted with what was received, estimated by a tokenizer; one that failed counts as a
    failed call.
    """

    def __init__(
        self,
        parts: AsyncGenerator[StreamPart, None],
        *,
        request: ChatRequest,
        model: str,
        on_done: Callable[[Usage], None],
    ) -> None:
        self._parts = parts
        self._request = request
        self._model = model
        self._on_done = on_done
        self._text: list[str] = []
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self._result: ChatResult | None = None
        self._done = False

    async def __anext__(self) -> str:
        if self._done:
            raise StopAsyncIteration
        while True:
            try:
                part = await anext(self._parts)
            except StopAsyncIteration:
                self._finish(complete=True)
                raise
            except LLMError as exc:
                self._finish(complete=False, failed=exc)
                raise
            except BaseException:
                self._finish(complete=False)
                raise
            if part.usage is not None:
                self._usage = part.usage
            self._finish_reason = part.finish_reason or self._finish_reason
            self._model = part.model or self._model
            if part.text:
                self._text.append(part.text)
                return part.text

    async def aclose(self) -> None:
        """Stops reading: the connection is closed and what was received is counted."""
        if not self._done:
            await self._parts.aclose()
            self._finish(complete=False)

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._text)

    @property
    def result(self) -> ChatResult:
        """The whole answer; only once the stream has ended."""
        if self._result is None:
            raise RuntimeError("the stream has not ended: iterate it to the end first")
        return self._result

    def _finish(self, *, complete: bool, failed: LLMError | None = None) -> None:
        """Counts the stream once: what the server reported, else an estimate of what was received;
        a stream that failed is a failed call, as a failed `chat` is."""
        if self._done:
            return
        self._done = True
        text = self.text
        usage = self._usage
        if usage is None and failed is not None and not text:
            usage = failed_usage(failed, estimate_usage(self._request, "").input_tokens)
        elif failed is not None:
            usage = (usage or estimate_usage(self._request, text)) + Usage(failed_calls=1)
        elif usage is None:
            usage = estimate_usage(self._request, text) if (complete or text) else Usage()
        self._on_done(usage)
        if complete:
            self._result = ChatResult(text=text, usage=usage, model=self._model, finish_reason=self._finish_reason)


def estimate_usage(request: ChatRequest, answer: str) -> Usage:
    """Usage counted here for a server that reports none, so token ceilings still hold.

    About four tokens of chat framing per message, as OpenAI's models count them.
    """
    from evigraph.providers.tokenizers import default_tokenizer

    count = default_tokenizer().count
    prompt = sum(count(m.content) + 4 for m in request.messages) + 3
    return Usage(input_tokens=prompt, output_tokens=count(answer), calls=1, estimated_calls=1)


def failed_usage(error: LLMError, estimate: int) -> Usage:
    """What a call that failed cost: one call, counted in `failed_calls` too, with the tokens its
    server reported when it answered (a malformed reply), else `estimate` (its input) when the
    server read the prompt (a timeout, a server error), else none (refused, unreachable)."""
    if error.input_tokens is not None:
        return Usage(calls=1, failed_calls=1, input_tokens=error.input_tokens, output_tokens=error.output_tokens or 0)
    read = isinstance(error, LLMResponseError | LLMTimeoutError) or (error.status or 0) >= 500
    return Usage(calls=1, failed_calls=1, input_tokens=estimate if read else 0, estimated_calls=int(read))


def _schema_name(name: str) -> str:
    """OpenAI wants `^[a-zA-Z0-9_-]{1,64}$` for a schema's name."""
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
    return cleaned or "response"


_SCHEMA_HINT = "use a model that follows JSON schemas, or a server with structured output (json_schema)"


def answer_items(data: Any, key: str, model: str) -> list[dict[str, Any]]:
    """The objects in the answer's `key` list, in order, anything else in it dropped: an answer
    about a batch (an item per passage) keeps its good items when the model garbles one. An
    answer without the list is an `LLMResponseError`, which fails the whole call."""
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LLMResponseError(f"{model} returned JSON without a {key} list; it begins {repr(data)[:80]}", _SCHEMA_HINT)
    return [item for item in items if isinstance(item, dict)]


def _shape_error(model: str, schema: str, exc: ValidationError) -> LLMResponseError:
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:3])
    more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return LLMResponseError(f"{model} returned JSON that does not fit {schema}: {problems}{more}", _SCHEMA_HINT)
