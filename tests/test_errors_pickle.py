"""Errors cross process boundaries whole (the extraction worker pickles what it raises): the
message, the hint that names the fix, and any field a subclass adds (pickled with its `__dict__`)."""

from __future__ import annotations

import pickle

import pytest

from evigraph import errors
from evigraph.errors import EvigraphError, LLMConfigurationError, LLMError

ERRORS = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, EvigraphError)]
"""Every error class evigraph defines (those named in `evigraph.errors`)."""


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_keeps_its_message_and_hint(cls: type[EvigraphError]) -> None:
    err = cls("the thing failed", "do this instead")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (back.message, back.hint, str(back)) == ("the thing failed", "do this instead", str(err))
    assert back.args == err.args


def test_fields_a_subclass_adds_survive() -> None:
    back = pickle.loads(pickle.dumps(LLMError("rate limited", "wait a minute", status=429)))
    assert (back.status, back.hint) == (429, "wait a minute")
    both = pickle.loads(pickle.dumps(LLMConfigurationError("no model", "pass --llm")))
    assert isinstance(both, errors.ConfigurationError) and both.hint == "pass --llm"
