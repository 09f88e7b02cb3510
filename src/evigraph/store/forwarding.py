"""A store that hands every call to the store it wraps, so a wrapper writes only what it changes.

The forwarding methods are made from `GraphStore` itself (each abstract method, plus the
concrete ones a wrapper should take from the store below rather than from the base's default),
so a method added to the contract is forwarded without anyone listing it here; the contract
suite, which runs on a `*`-scoped store, then holds the wrapper to the wrapped store's answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evigraph.store.base import GraphStore

PASSED_THROUGH = ("holds_documents", "save_indexes")
"""Concrete `GraphStore` methods a wrapper forwards too: the whole knowledge base answers them.
Not `saved_index_files` or `write_generation`: the defaults (nothing saved) are right for a view
whose reads differ from the store's, and a wrapper that shows all of it overrides them."""


class ForwardingStore(GraphStore):
    """Every `GraphStore` method forwarded to `inner`, its attributes copied; subclass and override."""

    def __init__(self, inner: GraphStore) -> None:
        self.inner = inner
        self.read_only = inner.read_only
        self.write_group_passages = inner.write_group_passages
        self.writes_on_this_machine = inner.writes_on_this_machine
        self.writes_at_once = inner.writes_at_once


def _forwarder(name: str) -> Callable[..., Any]:
    def forward(self: ForwardingStore, /, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.inner, name)(*args, **kwargs)  # a coroutine for an async method: awaited by the caller

    contract = getattr(GraphStore, name)
    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = contract.__doc__
    return forward


for _name in sorted({*GraphStore.__abstractmethods__, *PASSED_THROUGH}):
    setattr(ForwardingStore, _name, _forwarder(_name))
ForwardingStore.__abstractmethods__ = frozenset()
