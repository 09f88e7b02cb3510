"""The LLM spend of a knowledge base, summed over every ingest and finalize, for `status`.

An ingest report says what that ingest spent; what building the whole graph cost is what a user
weighs against the offline extractors, and it must survive the session that spent it. The sum is
kept in the store's settings, added to under the write turn so concurrent ingests lose nothing.
"""

from __future__ import annotations

from evigraph.models import LLMSpend
from evigraph.store.base import GraphStore

LLM_SPEND_SETTING = "llm_spend"


async def recorded_spend(store: GraphStore) -> LLMSpend | None:
    """What every ingest so far spent on an LLM; None when none ever did."""
    stored = await store.get_setting(LLM_SPEND_SETTING)
    return LLMSpend.model_validate_json(stored) if stored else None


async def record_spend(store: GraphStore, spend: LLMSpend) -> None:
    """Add one ingest's spend to the total; the caller holds the write turn (read, add, write)."""
    total = (await recorded_spend(store) or LLMSpend()) + spend
    total = total.model_copy(update={"max_tokens": None, "ceiling_reached": False})  # per ingest, not summed
    await store.set_setting(LLM_SPEND_SETTING, total.model_dump_json(exclude={"tokens_per_passage"}))
