"""A shared/exclusive gate for writers of one knowledge base.

New documents can be ingested side by side, but an update or re-extraction replaces what is
stored and prunes entities nothing mentions any more, so it runs alone: it waits for the
ingests already running, and ingests that arrive after it wait for it (no starvation).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Gate:
    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextlib.asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._exclusive and not self._waiting_exclusive)
            self._shared += 1
        try:
            yield
        finally:
            async with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._cond:
            self._waiting_exclusive += 1
            try:
                await self._cond.wait_for(lambda: not self._exclusive and not self._shared)
            finally:
                self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            async with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    @property
    def busy(self) -> bool:
        return self._exclusive or self._shared > 0
