"""Resolution at finalize confirmed by an LLM: one call per batch of candidate pairs.

Each call lists the entities of its pairs once (name, label, aliases, a snippet of a passage
naming it) and the pairs by number; the model answers with the numbers it judges the same and
those it judges different. Numbers are the cheapest answer to write, and a pair the model
leaves out is left undecided rather than guessed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evigraph.errors import LLMConfigurationError, LLMError, LLMResponseError
from evigraph.ingest.candidates import CandidatePair
from evigraph.ingest.extraction.budget import TokenBudget, estimate_input, metered_chat, spent
from evigraph.ingest.graph_resolution.base import GraphResolver, Judgement, PassageSource
from evigraph.models import LLMSpend
from evigraph.store.merging import EntityRecord

if TYPE_CHECKING:
    from evigraph.providers.llms import LLM

PAIRS_PER_CALL = 16
"""Pairs judged per call: a call's fixed part (instructions, schema) is then a small share of
its input, and one failed call leaves few pairs undecided."""

MAX_LLM_PAIRS = 2000
"""Candidate pairs sent at most, highest score first (125 calls); the rest are left undecided."""

MAX_ALIASES = 4

SYSTEM = (
    "You decide whether two entries of a knowledge graph name the same real-world thing. Entries are "
    'listed as: E<n> name [type] aka other names: "snippet of a passage naming it". Reply with JSON only: '
    '{"same":[pair numbers],"different":[pair numbers]}. Say same only when names and snippets leave no '
    "doubt; people, places or works that merely share a name are different."
)

ANSWER_SCHEMA: dict[str, Any] = {
    "title": "PairVerdicts",
    "type": "object",
    "properties": {
        "same": {"type": "array", "items": {"type": "integer"}},
        "different": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["same", "different"],
}


class LLMGraphResolution(GraphResolver):
    """Sends label-compatible candidate pairs to an LLM in batches; merges the pairs it confirms."""

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        pairs_per_call: int = PAIRS_PER_CALL,
        max_pairs: int = MAX_LLM_PAIRS,
        budget: TokenBudget | None = None,
    ) -> None:
        self.llm = llm
        self.pairs_per_call = max(1, pairs_per_call)
        self.max_pairs = max_pairs
        self.budget = budget
        """An ingest's token budget (`llm_verified`): a call is sent only when it fits the ceiling,
        and what it cost counts in the ingest's spend. None at finalize, which has no ceiling."""

    async def judge(
        self, pairs: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], passages: PassageSource
    ) -> Judgement:
        asked = list(pairs[: self.max_pairs])
        context = await passages.snippets({i for p in asked for i in (p.a, p.b)})
        batches = [asked[i : i + self.pairs_per_call] for i in range(0, len(asked), self.pairs_per_call)]
        results = await asyncio.gather(*(self._ask(b, entities, context) for b in batches))
        judgement = Judgement(unjudged=len(pairs) - len(asked), llm=LLMSpend())
        for batch, result in zip(batches, results, strict=True):
            if result is None:  # the ceiling, not a failure: nothing to say the LLM did wrong
                judgement.unjudged += len(batch)
                judgement.held += len(batch)
                continue
            verdicts, spend, error = result
            judgement.llm = (judgement.llm or LLMSpend()) + spend
            if error is not None:
                judgement.unjudged += len(batch)
                if error not in judgement.failures:
                    judgement.failures.append(error)
                continue
            for n, pair in enumerate(batch, start=1):
                verdict = verdicts.get(n)
                if verdict is None:
                    judgement.unjudged += 1
                elif verdict:
                    judgement.same.append(pair)
                else:
                    judgement.different.append(pair)
        return judgement

    async def _ask(
        self, batch: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], context: Mapping[str, str]
    ) -> tuple[dict[int, bool], LLMSpend, str | None] | None:
        """Verdicts by pair number (1-based), what the call cost, and its error if it failed; None
        when the token ceiling held the call back (nothing was sent, nothing failed).

        A failed call leaves its pairs undecided and the others stand; a configuration error
        (a rejected key, an unknown model) would fail every call alike, so it stops finalize.
        Finalize has no ceiling, but goes through the same metering, so a failed call is costed
        one way whoever asks.
        """
        from evigraph.providers.llms.base import Message, Usage, failed_usage

        budget = self.budget or TokenBudget()
        messages = (Message.system(SYSTEM), Message.user(user_prompt(batch, entities, context)))
        result = await metered_chat(self.llm, budget, messages, ANSWER_SCHEMA, 32 + 8 * len(batch))
        if result is None:
            return None
        if isinstance(result, LLMConfigurationError):
            raise result
        if isinstance(result, LLMError):
            return {}, spent(failed_usage(result, estimate_input(messages, ANSWER_SCHEMA))), str(result)
        try:
            return read_verdicts(result.data, len(batch)), spent(result.usage), None
        except LLMResponseError as exc:
            budget.unusable()
            return {}, spent(result.usage + Usage(failed_calls=1)), str(exc)


def user_prompt(
    batch: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], context: Mapping[str, str]
) -> str:
    """The entities of `batch`, each once, then its pairs by number."""
    numbers: dict[str, int] = {}
    for pair in batch:
        for eid in (pair.a, pair.b):
            numbers.setdefault(eid, len(numbers) + 1)
    lines = [describe(numbers[eid], entities[eid], context.get(eid, "")) for eid in numbers]
    pairs = "; ".join(f"{n} E{numbers[p.a]}=E{numbers[p.b]}" for n, p in enumerate(batch, start=1))
    return "\n".join([*lines, f"Pairs: {pairs}"])


def describe(number: int, entity: EntityRecord, snippet: str) -> str:
    others = [a for a in entity.aliases if a.casefold() != entity.name.casefold()][:MAX_ALIASES]
    line = f"E{number} {entity.name} [{entity.label}]"
    if others:
        line += " aka " + ", ".join(others)
    if snippet:
        line += ": " + json.dumps(snippet, ensure_ascii=False)
    return line


def read_verdicts(data: Any, pairs: int) -> dict[int, bool]:
    """Pair number -> same; numbers out of range are ignored, a number in both lists is undecided."""
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("same"), list)
        or not isinstance(data.get("different"), list)
    ):
        raise LLMResponseError(
            'the model answered without the lists "same" and "different"',
            "use a model that follows JSON schemas, or a server with structured output",
        )
    same = {n for n in data["same"] if isinstance(n, int) and 1 <= n <= pairs}
    different = {n for n in data["different"] if isinstance(n, int) and 1 <= n <= pairs}
    return {**dict.fromkeys(same - different, True), **dict.fromkeys(different - same, False)}
