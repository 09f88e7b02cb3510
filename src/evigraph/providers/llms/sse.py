"""Server-sent events, as OpenAI-compatible servers stream a chat answer.

Only what chat streams use: `data:` fields joined per event, comments and other fields skipped.
The caller decides what `[DONE]` and an `error` payload mean.
"""

from __future__ import annotations

from collections.abc import AsyncIterator


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each event in `lines` (a response's lines, without their line ends)."""
    buffer: list[str] = []
    async for line in lines:
        if not line:
            if buffer:
                yield "\n".join(buffer)
                buffer = []
            continue
        if line.startswith(":"):  # a comment: servers send them to keep the connection open
            continue
        name, _, value = line.partition(":")
        if name == "data":
            buffer.append(value[1:] if value.startswith(" ") else value)
    if buffer:
        yield "\n".join(buffer)
