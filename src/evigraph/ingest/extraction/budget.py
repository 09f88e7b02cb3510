"""One ingest's LLM spend, and the token ceiling it stops before.

A ceiling the bill could pass by a call is no ceiling, so a call is sent only when what it may
cost fits: its input, estimated before sending, plus the most output it may write (`max_tokens`).
Calls run concurrently, so what a call may cost is reserved before it is sent and settled with
what the server counted when it answers. Once a call does not fit, no further call is sent in
this ingest: the documents finished so far are written, the rest are reported as left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evigraph.errors import EvigraphError, LLMError
from evigraph.models import GraphData, LLMSpend
from evigraph.providers.llms.base import LLM, ChatRequest, ChatResult, Message, Usage, estimate_usage, failed_usage
from evigraph.providers.tokenizers import default_tokenizer


class PartlyExtracted(EvigraphError):
    """Some calls of a batch failed: `done` holds, per document of the batch, its graph when every
    passage of it was answered, else None. Only the None ones need extracting again; the others'
    answers are in hand (a passage the model skipped included, which the cache does not keep)."""

    def __init__(self, cause: EvigraphError, done: Sequence[GraphData | None]) -> None:
        super().__init__(cause.message, cause.hint)
        self.cause = cause
        self.done = list(done)


class CeilingReached(EvigraphError):
    """The next LLM call would pass the ingest's token ceiling; it was not sent.

    `done` holds, per document of the extractor's batch, its graph when every passage of it was
    extracted, else None: those are written, the others left for a later run.
    """

    def __init__(self, ceiling: int, done: Sequence[GraphData | None] = ()) -> None:
        super().__init__(
            f"the LLM token ceiling of {ceiling:,} would be passed by the next call",
            "raise --max-llm-tokens (max_llm_tokens=), or run again later to ingest what is left",
        )
        self.ceiling = ceiling
        self.done = list(done)


@dataclass
class TokenBudget:
    """What one ingest spent on an LLM, and its ceiling (None: no ceiling).

    `active` is set by an extractor that calls an LLM, so a report says "0 calls" for an ingest
    whose passages all came from the cache, and nothing for an offline one.
    """

    ceiling: int | None = None
    active: bool = False
    usage: Usage = field(default_factory=Usage)
    reserved: int = 0
    passages: int = 0
    cached_passages: int = 0
    contexts: int = 0
    cached_contexts: int = 0
    unaligned_entities: int = 0
    dangling_relations: int = 0
    reached: bool = False

    @property
    def spent(self) -> int:
        return self.usage.input_tokens + self.usage.output_tokens

    def reserve(self, tokens: int) -> bool:
        """Hold `tokens` for a call about to be sent; False (and no call after) when they do not fit."""
        if self.reached:
            return False
        if self.ceiling is not None and self.spent + self.reserved + tokens > self.ceiling:
            self.reached = True
            return False
        self.reserved += tokens
        return True

    def settle(self, reserved: int, usage: Usage) -> None:
        """Replace a call's reservation with what it cost."""
        self.reserved -= reserved
        self.usage = self.usage + usage

    def unusable(self) -> None:
        """A call answered whose JSON did not fit what was asked: paid for, and failed."""
        self.usage = self.usage + Usage(failed_calls=1)

    def exceeded(self, done: Sequence[GraphData | None] = ()) -> CeilingReached:
        return CeilingReached(self.ceiling or 0, done)

    def spend(self) -> LLMSpend:
        return LLMSpend(
            **self.usage.model_dump(),
            passages=self.passages,
            cached_passages=self.cached_passages,
            contexts=self.contexts,
            cached_contexts=self.cached_contexts,
            unaligned_entities=self.unaligned_entities,
            dangling_relations=self.dangling_relations,
            max_tokens=self.ceiling,
            ceiling_reached=self.reached,
        )


def spent(usage: Usage) -> LLMSpend:
    """The calls and tokens of `usage` as a report's spend (extraction, contexts, resolution):
    every field of a `Usage` is one of an `LLMSpend`."""
    return LLMSpend(**usage.model_dump())


async def metered_chat(
    llm: LLM, budget: TokenBudget, messages: Sequence[Message], schema: Mapping[str, Any], max_tokens: int
) -> ChatResult | LLMError | None:
    """One JSON call charged to `budget`: its answer, the error that failed it, or None when the
    ceiling held it back (nothing sent). An error is returned, not raised, so a caller running
    several calls lets the others finish and keeps what they cost. A call that failed counts as a
    call, with what it cost (`failed_usage`)."""
    estimate = estimate_input(messages, schema)
    if not budget.reserve(estimate + max_tokens):
        return None
    try:
        result = await llm.chat(messages, json_schema=schema, max_tokens=max_tokens)
    except LLMError as exc:
        budget.settle(estimate + max_tokens, failed_usage(exc, estimate))
        return exc
    budget.settle(estimate + max_tokens, result.usage)
    return result


def estimate_input(messages: Sequence[Message], schema: Mapping[str, Any]) -> int:
    """Input tokens of a call before it is sent: the messages as `estimate_usage` counts them, plus
    the JSON schema, which servers with structured output read as part of the prompt."""
    request = ChatRequest(messages=tuple(messages), output="json_schema", json_schema=dict(schema))
    count = default_tokenizer().count
    return estimate_usage(request, "").input_tokens + count(json.dumps(schema, separators=(",", ":")))
