"""`async with` for what holds connections or slots: leaving the block calls `aclose`."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class AsyncClosing:
    """Makes `async with x:` give `x` and call `x.aclose()` on the way out, error or not, so a
    caller that leaves early still releases what `x` holds (a connection, a slot under a
    concurrency limit). A subclass defines `aclose`; this class only wires it to the block."""

    async def aclose(self) -> None:
        """Releases what the object holds; nothing by default."""
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
