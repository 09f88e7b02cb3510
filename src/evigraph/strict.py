"""`StrictInput`: the base of every input model a caller fills in (tool arguments, queries).

Unknown fields are refused (`extra="forbid"`) so a misspelt argument fails loudly instead of
being ignored, and every bound is stated in the JSON Schema a caller reads.

Text with a lone surrogate (`"\\ud800"`, valid JSON but not valid Unicode) is refused here, for
every field of every model at once: the engine cannot take it as a parameter and no answer
holding it can be encoded, so past this point it would surface as an engine crash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evigraph.errors import ConfigurationError
from evigraph.surrogates import surrogate_path


class StrictInput(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        where = surrogate_path(data)
        if where is not None:
            raise ValueError(
                f"{where} holds a lone surrogate (an escape such as \\ud800 without its pair), which is not "
                "valid Unicode; send the character itself or a complete surrogate pair"
            )
        return data


def validation_errors(exc: ValidationError, limit: int = 5, names: Mapping[str, str] | None = None) -> str:
    """Pydantic's errors as one line: `field: message; ...`; `names` renames fields as the caller
    knows them (the CLI's `--expand-hops` for `expand_hops`)."""
    parts = []
    for err in exc.errors()[:limit]:
        loc = [str(p) for p in err["loc"]]
        if names and loc:
            loc[0] = names.get(loc[0], loc[0])
        where = ".".join(loc) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


M = TypeVar("M", bound="StrictInput")


def build(
    model: type[M], values: dict[str, Any], hint: str, *, names: Mapping[str, str] | None = None, what: str = ""
) -> M:
    """`model` from `values`, or a ConfigurationError naming every bad field and the fix.

    A surface that spells the fields otherwise passes `names` (and says `what` it was given, e.g.
    "search options"), so the error names what the user typed, not the Python parameter.
    """
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        found = validation_errors(exc, names=names)
        raise ConfigurationError(f"invalid {what or model.__name__}: {found}", hint=hint) from None


def require_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """Refuse a value outside `choices`: a misspelt mode must not quietly run as another one."""
    if value not in choices:
        raise ConfigurationError(
            f"{name}={value!r} is not one of {', '.join(choices)}", hint=f"pass {name}={choices[0]!r}"
        )


def require_at_least(name: str, value: int, low: int = 1) -> None:
    """Refuse a count below `low`: a zero or negative limit would return nothing and look like no match."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigurationError(f"{name} must be an integer of at least {low}, not {value!r}", hint=f"e.g. {name}=10")
