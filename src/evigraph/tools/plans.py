"""Per-file ingest plans an agent may choose, inside limits the operator sets.

An agent picks a chunker, extractor and resolver per file with glob rules; the first rule that
matches a file wins. What it may pick is bounded by `PlanLimits` (cheap, local options by
default) so an agent cannot run up cost or time the operator did not allow. A choice outside
the limits is replaced by the default and the result says why, rather than failing the ingest.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evigraph.errors import ConfigurationError, ToolError
from evigraph.ingest.chunking import CHUNKERS
from evigraph.ingest.extraction import EXTRACTORS
from evigraph.ingest.resolution import RESOLVERS, checked_max_llm_pairs
from evigraph.strategies import Registry
from evigraph.tools.inputs import PlanRule

KB_DEFAULT = "default"
"""A plan slot left to the knowledge base's own strategy (what `evigraph ingest` would use)."""
DEFAULTS = {"chunker": KB_DEFAULT, "extractor": KB_DEFAULT, "resolver": KB_DEFAULT}

PLAN_KINDS: dict[str, Registry[Any]] = {"chunker": CHUNKERS, "extractor": EXTRACTORS, "resolver": RESOLVERS}
"""What a plan rule may choose, each from its kind's registry (names, costs, which are cheap)."""


def costs() -> dict[str, dict[str, str]]:
    """Kind -> name -> what it is and costs, read from the registries so new entries appear by themselves."""
    return {kind: registry.descriptions() for kind, registry in PLAN_KINDS.items()}


DEFAULT_MAX_LLM_TOKENS = 200_000
"""An ingest call's LLM ceiling unless the operator sets one: a few hundred passages' extraction."""


DEFAULT_MAX_LLM_PAIRS = 500
"""Pairs an agent's finalize may send to the LLM unless the operator says otherwise: 32 calls of 16."""


def _graph_resolvers() -> Registry[Any]:
    from evigraph.ingest.graph_resolution import GRAPH_RESOLVERS

    return GRAPH_RESOLVERS


class PlanLimits(BaseModel):
    """What an agent's ingest plan may pick; keys left out keep their cheap value."""

    model_config = ConfigDict(extra="forbid")

    chunkers: tuple[str, ...] = Field(default_factory=CHUNKERS.cheap_names)
    extractors: tuple[str, ...] = Field(default_factory=EXTRACTORS.cheap_names)
    resolvers: tuple[str, ...] = Field(default_factory=RESOLVERS.cheap_names)
    max_chunks: int | None = Field(1000, ge=1, description="files chunking into more passages are refused")
    max_llm_tokens: int | None = Field(
        DEFAULT_MAX_LLM_TOKENS,
        ge=0,
        description="LLM tokens (input + output) one ingest call may spend, whatever the agent asks; None: no ceiling",
    )
    finalize_resolvers: tuple[str, ...] = Field(
        default_factory=lambda: _graph_resolvers().cheap_names(),
        description="resolvers the finalize tool may run over the whole graph (exact and fuzzy unless allowed more)",
    )
    max_llm_pairs: int = Field(
        DEFAULT_MAX_LLM_PAIRS,
        description="candidate pairs an LLM resolver may judge in one finalize call, or in one ingest call "
        "(llm_verified, where resolvers allow it); 0: none, names the graph already holds still map",
    )

    @field_validator("max_llm_pairs")
    @classmethod
    def _pairs(cls, value: int) -> int:
        checked_max_llm_pairs(value)  # the rule every entry shares: 0 or more
        return value


CHEAP_PLAN_LIMITS = PlanLimits()


def plan_limits_from(overrides: dict[str, Any] | None) -> PlanLimits:
    """`overrides` merged over the cheap limits, with unknown options refused up front."""
    try:
        limits = PlanLimits.model_validate(overrides or {})  # defaults read the registries now
    except ValidationError as exc:
        raise ConfigurationError(f"invalid plan_limits: {exc.errors()[0]['msg']}", hint=_limits_hint()) from None
    for kind, allowed in _allowed(limits):
        unknown = [a for a in allowed if a not in PLAN_KINDS[kind].names()]
        if unknown:
            raise ConfigurationError(f"plan_limits names unknown {kind}(s): {', '.join(unknown)}", hint=_limits_hint())
    if unknown := [r for r in limits.finalize_resolvers if r not in _graph_resolvers().names()]:
        raise ConfigurationError(
            f"plan_limits names unknown finalize resolver(s): {', '.join(unknown)}", hint=_limits_hint()
        )
    return limits


def allowed_finalize_resolver(name: str | None, limits: PlanLimits) -> str:
    """The resolver an agent's finalize runs (exact when it names none), if the operator allows it."""
    chosen = name or "exact"
    if chosen not in limits.finalize_resolvers:
        raise ToolError(
            f"resolver {chosen!r} is not allowed here",
            hint=f"allowed: {', '.join(limits.finalize_resolvers)}; the operator allows more with "
            f"plan_limits={{'finalize_resolvers': [...]}}",
        )
    return chosen


def _limits_hint() -> str:
    kinds = [*(f"{kind}s: {registry.choices}" for kind, registry in PLAN_KINDS.items())]
    kinds.append(f"finalize_resolvers: {_graph_resolvers().choices}")
    return "keys: chunkers, extractors, resolvers, max_chunks, max_llm_tokens, finalize_resolvers, max_llm_pairs; " + (
        "; ".join(kinds)
    )


def choose_plan(path: str, rules: Sequence[PlanRule] | None, limits: PlanLimits) -> tuple[dict[str, str], str | None]:
    """The plan for the file at `path` and, when a choice was replaced, the reason."""
    plan = dict(DEFAULTS)
    rule = next((r for r in rules or () if fnmatch.fnmatchcase(path, r.match)), None)
    reasons = []
    if rule is not None:
        for kind, allowed in (("chunker", limits.chunkers), ("extractor", limits.extractors)):
            wanted = getattr(rule, kind)
            if wanted is None:
                continue
            if wanted in allowed:
                plan[kind] = wanted
            else:
                used = "the knowledge base's default" if plan[kind] == KB_DEFAULT else repr(plan[kind])
                reasons.append(f"{kind} {wanted!r} is not allowed here (allowed: {', '.join(allowed)}); used {used}")
        if rule.resolver is not None:
            if rule.resolver in limits.resolvers:
                plan["resolver"] = rule.resolver
            else:
                reasons.append(f"resolver {rule.resolver!r} is not allowed (allowed: {', '.join(limits.resolvers)})")
    return plan, "; ".join(reasons) or None


def describe_options(limits: PlanLimits) -> str:
    """The plan options an agent may pick, with what each costs, for the ingest tool's description."""
    lines = []
    for kind, allowed in _allowed(limits):
        described = PLAN_KINDS[kind].descriptions()
        options = "; ".join(f"{name}: {described.get(name, 'allowed by the operator')}" for name in allowed)
        default = "the knowledge base's own" if DEFAULTS[kind] == KB_DEFAULT else DEFAULTS[kind]
        lines.append(f"- {kind} (default: {default}): {options}")
    if limits.max_chunks:
        lines.append(f"- files of more than {limits.max_chunks} passages are refused before extraction")
    if any(not RESOLVERS.get(r).cheap for r in limits.resolvers):
        lines.append(f"- an LLM resolver sends at most {limits.max_llm_pairs:,} candidate pairs per ingest call")
    if limits.max_llm_tokens is not None:
        lines.append(
            f"- an ingest call spends at most {limits.max_llm_tokens:,} LLM tokens (max_llm_tokens may lower it); "
            "what is not ingested is listed in `left`"
        )
    return "\n".join(lines)


def llm_ceiling(asked: int | None, limits: PlanLimits) -> int | None:
    """The ceiling an ingest call runs under: the agent's, never above the operator's."""
    if asked is None or limits.max_llm_tokens is None:
        return limits.max_llm_tokens if asked is None else asked
    return min(asked, limits.max_llm_tokens)


def _allowed(limits: PlanLimits) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return (("chunker", limits.chunkers), ("extractor", limits.extractors), ("resolver", limits.resolvers))
