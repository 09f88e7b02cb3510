"""Models built from values their maker knows are valid, skipping pydantic's validation."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

_M = TypeVar("_M", bound=BaseModel)
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}


def unchecked(cls: type[_M], values: dict[str, Any], fields_set: set[str] | None = None) -> _M:
    """A model from values already known to be valid, set as pydantic's own unpickling sets them.

    For the extractors' hot paths, which build tens of models a passage from values they made
    themselves (ints of a match, a constant confidence): validating the relations and building
    the spans with `model_construct`, which still walks the fields, took a tenth of rule
    extraction (3,000 passages, profiled). Without `fields_set`, `values` holds every field, and
    the models of a class share one set of them: a frozen model never changes its set in place
    (`model_copy` copies it first).
    """
    if fields_set is None:
        fields_set = _ALL_FIELDS.get(cls)
        if fields_set is None:
            fields_set = _ALL_FIELDS[cls] = set(cls.model_fields)
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


_new = object.__new__
_set = object.__setattr__
