"""What the sections of `FalkorStore` (mixins kept apart so the store module stays a wiring) use of
the store: declared once here, given by `FalkorStore`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from evigraph.store.falkordb.caches import Generation
    from evigraph.store.falkordb.connection import Connection
    from evigraph.store.ranking import ChangeJournal

T = TypeVar("T")


class FalkorSection:
    """The store's connection, its generation cache, and how a section runs a read or a write
    (`FalkorStore._read`, `_write`: off the event loop, a write bumping the generation)."""

    read_only: bool
    _journal: ChangeJournal

    if TYPE_CHECKING:

        @property
        def conn(self) -> Connection: ...

        @property
        def cache(self) -> Generation: ...

        async def _read(self, fn: Callable[[], T]) -> T: ...

        async def _write(self, fn: Callable[[], T]) -> T: ...

        async def _write_unindexed(self, fn: Callable[[], T]) -> T: ...
