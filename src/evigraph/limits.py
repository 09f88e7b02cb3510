"""Operator limits: how much one tool call may ask for and return, and how long one read may run.

An operator serving the tools to agents decides what an agent's call may cost; an agent cannot
raise these. `Limits` is the one registry: each field's name is the Python keyword
(`KnowledgeBase(limits=Limits(max_hits=20))`), and the CLI flag (`--max-hits`) and environment
variable (`EVIGRAPH_MAX_HITS`) are derived from it, so the four spellings cannot drift apart.
Defaults are the bounds evigraph had before they were settings.

A tool input field bounded by a limit carries `Bounded(name)`; `bounded_input` rewrites its
upper bound (and a default above it) from the configured value, so validation, the JSON Schema
an agent is shown and the error an agent gets all say the same number.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from evigraph.errors import ConfigurationError

ENV_PREFIX = "EVIGRAPH_"
M = TypeVar("M", bound=BaseModel)


class Limits(BaseModel):
    """What one tool call may ask for and return, and how long one read may run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_hits: int = Field(
        50, ge=1, le=200, description="most hits one search returns (the search tools' limit, retrieve's top_k)"
    )
    max_fetch_ids: int = Field(20, ge=1, le=1000, description="most passages one read_passages call asks for")
    max_fetch_chars: int = Field(
        20_000, ge=1, le=1_000_000, description="most characters of text one passage read returns (max_chars)"
    )
    max_snippet_chars: int = Field(400, ge=20, le=100_000, description="length of a search hit's text preview")
    max_response_chars: int = Field(
        40_000,
        ge=10_000,
        le=10_000_000,
        description="most characters of JSON one tool result sends over MCP or REST; longer ones are shortened",
    )
    read_deadline_seconds: float = Field(
        30.0, gt=0, le=3600, description="seconds a read tool may run before it is stopped with an error"
    )

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_yes_or_no(cls, value: Any) -> Any:
        """True is 1 to pydantic; a limit set to True is a mistake, not a request for one hit."""
        if isinstance(value, bool):
            raise ValueError("a yes/no is not a number")
        return value

    @classmethod
    def of(cls, values: Limits | Mapping[str, Any] | None) -> Limits:
        """`values` as `Limits` (a mapping of setting names, or None for the defaults); a bad value
        is a ConfigurationError naming the setting, its bounds and where to set it."""
        if isinstance(values, Limits):
            return values
        return _validated(dict(values or {}), {})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **flags: Any) -> Limits:
        """`flags` (None: not given) win over the environment's EVIGRAPH_<NAME> variables, which win
        over the defaults; how the CLI, `evigraph mcp` and `evigraph serve` read them."""
        environ = os.environ if environ is None else environ
        unknown = sorted(set(flags) - set(cls.model_fields))
        if unknown:
            raise ConfigurationError(f"unknown limit(s): {', '.join(unknown)}", hint=f"limits: {', '.join(SETTINGS)}")
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name in cls.model_fields:
            if flags.get(name) is not None:
                values[name], sources[name] = flags[name], flag_name(name)
            elif (text := environ.get(env_name(name), "").strip()) != "":
                values[name], sources[name] = text, env_name(name)
        return _validated(values, sources)

    def changed(self) -> dict[str, Any]:
        """The settings that differ from the defaults, for a server's start line."""
        default = DEFAULT_LIMITS.model_dump()
        return {name: value for name, value in self.model_dump().items() if value != default[name]}


SETTINGS: tuple[str, ...] = tuple(Limits.model_fields)
DEFAULT_LIMITS = Limits()


def env_name(setting: str) -> str:
    return ENV_PREFIX + setting.upper()


def flag_name(setting: str) -> str:
    return "--" + setting.replace("_", "-")


def spellings(setting: str) -> str:
    """Where `setting` is set, for a hint: its keyword, flag and variable."""
    return f"{setting} (Python), {flag_name(setting)} (CLI), {env_name(setting)} (environment)"


def _validated(values: dict[str, Any], sources: Mapping[str, str]) -> Limits:
    try:
        return Limits.model_validate(values)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        if name not in Limits.model_fields:
            raise ConfigurationError(
                f"unknown limit {name or 'setting'!r}", hint=f"limits: {', '.join(SETTINGS)}"
            ) from None
        raise ConfigurationError(
            f"{sources.get(name, name)}={values.get(name)!r} is not a possible {name}: {err['msg'].lower()}",
            hint=f"give {_range(name)} (default {Limits.model_fields[name].default}); set it with {spellings(name)}",
        ) from None


def _range(name: str) -> str:
    info = Limits.model_fields[name]
    low = next((m for m in info.metadata if isinstance(m, annotated_types.Ge | annotated_types.Gt)), None)
    high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
    kind = "a whole number" if info.annotation is int else "a number"
    if isinstance(low, annotated_types.Gt):
        return f"{kind} above {low.gt} and at most {high}"
    return f"{kind} from {getattr(low, 'ge', 1)} to {high}"


# -- tool inputs bounded by a limit ------------------------------------------------------------


@dataclass(frozen=True)
class LimitedBy:
    """Marks an input field whose upper bound is the operator's `setting` (written by `Bounded`, with
    that bound); `ceiling` keeps a field's own, lower bound (themes: 10)."""

    setting: str
    ceiling: int | None = None

    def bound(self, limits: Limits) -> int:
        value = int(getattr(limits, self.setting))
        return value if self.ceiling is None else min(value, self.ceiling)


@dataclass(frozen=True)
class Bounded(annotated_types.GroupedMetadata):
    """A field bounded by the operator's `setting`, written once: the upper bound at the default
    limits (a number's, or with `items` a list's length) and the `LimitedBy` marker, so the default
    and the setting cannot be written apart (`Annotated[int, Field(ge=1), Bounded("max_hits")]`)."""

    setting: str
    ceiling: int | None = None
    items: bool = False
    upper: int | None = None
    """The bound in force: set by `bounded_input` from the operator's limits; None, the default's."""

    @property
    def marker(self) -> LimitedBy:
        return LimitedBy(self.setting, self.ceiling)

    @property
    def bound(self) -> int:
        return self.upper if self.upper is not None else self.marker.bound(DEFAULT_LIMITS)

    def __iter__(self) -> Iterator[object]:
        yield annotated_types.MaxLen(self.bound) if self.items else annotated_types.Le(self.bound)


Hits = Annotated[int, Field(ge=1), Bounded("max_hits")]
"""A search's number of hits (limit, top_k): 1 to the operator's max_hits."""
FetchChars = Annotated[int, Field(ge=1), Bounded("max_fetch_chars")]
"""Characters of passage text one read returns: 1 to the operator's max_fetch_chars."""


def limited_fields(model: type[BaseModel]) -> dict[str, LimitedBy]:
    """The fields of `model` bounded by a limit, with their marker."""
    return {
        name: m.marker if isinstance(m, Bounded) else m
        for name, info in model.model_fields.items()
        for m in info.metadata
        if isinstance(m, LimitedBy | Bounded)
    }


def bounded_input(model: type[M], limits: Limits) -> type[M]:
    """`model` with the bounds of its `LimitedBy` fields set from `limits` (a default above its
    bound lowered to it); `model` itself when nothing changes, so default limits cost nothing."""
    marked = limited_fields(model)
    bounds = tuple(sorted((name, marker.bound(limits)) for name, marker in marked.items()))
    return _bounded(model, bounds) if bounds else model


@functools.cache
def _bounded(model: type[M], bounds: tuple[tuple[str, int], ...]) -> type[M]:
    changed: dict[str, Any] = {}
    for name, bound in bounds:
        info = model.model_fields[name]
        if _upper(info.metadata) == bound:
            continue
        new = copy.copy(info)
        new.metadata = [_with_upper(m, bound) for m in info.metadata]
        if isinstance(info.default, int) and not isinstance(info.default, bool) and info.default > bound:
            new.default = bound
        changed[name] = (info.annotation, new)
    if not changed:
        return model
    return create_model(model.__name__, __base__=model, __module__=model.__module__, __doc__=model.__doc__, **changed)


def _upper(metadata: list[Any]) -> int | None:
    for m in metadata:
        if isinstance(m, Bounded):
            return m.bound
        if isinstance(m, annotated_types.Le):
            return m.le if isinstance(m.le, int) else None
        if isinstance(m, annotated_types.MaxLen):
            return m.max_length
    return None


def _with_upper(m: Any, bound: int) -> Any:
    if isinstance(m, Bounded):
        return dataclasses.replace(m, upper=bound)
    if isinstance(m, annotated_types.Le):
        return annotated_types.Le(bound)
    if isinstance(m, annotated_types.MaxLen):
        return annotated_types.MaxLen(bound)
    return m
