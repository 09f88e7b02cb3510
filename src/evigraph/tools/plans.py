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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evigraph.errors import ConfigurationError
from evigraph.tools.inputs import PlanRule

KB_DEFAULT = "default"
"""A plan slot left to the knowledge base's own strategy (what `evigraph ingest` would use)."""
DEFAULTS = {"chunker": KB_DEFAULT, "extractor": KB_DEFAULT, "resolver": "exact"}

COSTS = {
    "chunker": {
        "structural": "follows headings, lists and tables (Markdown, PDF pages); best for structured files",
        "sentence": "sentence-aligned passages of a token cap; best for prose",
        "fixed": "fixed-size windows; cheapest, ignores structure",
    },
    "extractor": {
        "auto": "spaCy NER when a model is installed, else rules (local, no LLM)",
        "spacy": "spaCy NER, local, about 40 passages/s on 2 cores",
        "rules": "capitalised-name rules, local, about 75 passages/s; lower precision",
    },
    "resolver": {"exact": "merge entities whose normalised name and label match; local, instant"},
}


class PlanLimits(BaseModel):
    """What an agent's ingest plan may pick; keys left out keep their cheap value."""

    model_config = ConfigDict(extra="forbid")

    chunkers: tuple[str, ...] = ("sentence", "fixed", "structural")
    extractors: tuple[str, ...] = ("auto", "rules", "spacy")
    resolvers: tuple[str, ...] = ("exact",)
    max_chunks: int | None = Field(1000, ge=1, description="files chunking into more passages are refused")


CHEAP_PLAN_LIMITS = PlanLimits()


def plan_limits_from(overrides: dict[str, Any] | None) -> PlanLimits:
    """`overrides` merged over the cheap limits, with unknown options refused up front."""
    try:
        limits = PlanLimits.model_validate({**CHEAP_PLAN_LIMITS.model_dump(), **(overrides or {})})
    except ValidationError as exc:
        raise ConfigurationError(f"invalid plan_limits: {exc.errors()[0]['msg']}", hint=_limits_hint()) from None
    for kind, allowed in (("chunker", limits.chunkers), ("extractor", limits.extractors)):
        unknown = [a for a in allowed if a not in COSTS[kind]]
        if unknown:
            raise ConfigurationError(f"plan_limits names unknown {kind}(s): {', '.join(unknown)}", hint=_limits_hint())
    return limits


def _limits_hint() -> str:
    return "keys: chunkers, extractors, resolvers, max_chunks; " + "; ".join(
        f"{kind}s: {', '.join(options)}" for kind, options in COSTS.items()
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
    for kind, allowed in (
        ("chunker", limits.chunkers),
        ("extractor", limits.extractors),
        ("resolver", limits.resolvers),
    ):
        options = "; ".join(f"{name}: {COSTS[kind].get(name, 'allowed by the operator')}" for name in allowed)
        default = "the knowledge base's own" if DEFAULTS[kind] == KB_DEFAULT else DEFAULTS[kind]
        lines.append(f"- {kind} (default: {default}): {options}")
    if limits.max_chunks:
        lines.append(f"- files of more than {limits.max_chunks} passages are refused before extraction")
    return "\n".join(lines)
