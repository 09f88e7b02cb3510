"""Any `text -> list[str]` function as a chunking strategy.

Users often already have a splitter (LangChain, a semantic chunker, a regex) and should not have
to learn the offset bookkeeping to plug it in. The function returns strings; this adapter finds
where each string sits in the document so chunks can still cite a span and a page. Splitters
that normalise white space or overlap their pieces are common, so the search tolerates both.
Async functions are supported because many model-backed splitters are async; chunking itself is
synchronous, so the coroutine is driven here.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.models import LoadedDocument, TextChunk

ChunkFunction = Callable[[str], Sequence[str] | Awaitable[Sequence[str]]]

_PROBE_CHARS = 40
"""How much of a piece's start is searched for when the whole piece is not found verbatim."""


class CallableChunking(ChunkingStrategy):
    """Wraps `fn(text) -> list[str]` (sync or async); offsets are recovered by forward search.

    A piece found verbatim gets its exact span. Otherwise the piece is matched ignoring white
    space differences, then by its first 40 characters; failing all of that it is placed at the
    end of the previous piece. `chunk.text` is always the piece as returned (stripped), so for a
    function that rewrites text `document.text[start:end]` may differ from it.
    """

    name = "callable"

    def __init__(self, fn: ChunkFunction) -> None:
        if not callable(fn):
            raise ConfigurationError("CallableChunking needs a function text -> list[str]", "pass a callable")
        self.fn = fn

    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        pieces = self._call(document.text)
        text = document.text
        out: list[TextChunk] = []
        prev_start, prev_end = 0, 0
        for raw in pieces:
            if not isinstance(raw, str):
                raise ConfigurationError(
                    f"chunking function returned a {type(raw).__name__} piece",
                    "return a list of strings",
                )
            piece = raw.strip()
            if not piece:
                continue
            start, end = _locate(text, piece, prev_start, prev_end, first=not out)
            out.append(TextChunk(index=len(out), text=piece, start=start, end=end, page=document.page_at(start)))
            prev_start, prev_end = start, end
        return out

    def _call(self, text: str) -> Sequence[str]:
        result: Any = self.fn(text)
        if inspect.isawaitable(result):
            result = _run(result)
        if isinstance(result, str) or not isinstance(result, Sequence):
            raise ConfigurationError(
                f"chunking function returned {type(result).__name__}, expected list[str]",
                "return a list of strings",
            )
        return result


def _run(awaitable: Awaitable[Any]) -> Any:
    """Drive a coroutine to completion from synchronous code.

    `asyncio.run` cannot be used on a thread whose loop is running (e.g. when called from async
    code), so in that case the coroutine runs on a fresh loop in a worker thread.
    """

    async def wrapper() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrapper())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evigraph-chunk") as pool:
        return pool.submit(asyncio.run, wrapper()).result()


def _locate(text: str, piece: str, prev_start: int, prev_end: int, *, first: bool) -> tuple[int, int]:
    """Best forward position of `piece`: after the previous piece, else overlapping it."""
    origins = (prev_end,) if first else (prev_end, prev_start + 1)
    for origin in origins:
        idx = text.find(piece, origin)
        if idx >= 0:
            return idx, idx + len(piece)
    pattern = _loose_pattern(piece)
    for origin in origins:
        m = pattern.search(text, origin)
        if m:
            return m.start(), m.end()
    probe = piece[:_PROBE_CHARS]
    for origin in origins:
        idx = text.find(probe, origin)
        if idx >= 0:
            return idx, min(len(text), idx + len(piece))
    return prev_end, min(len(text), prev_end + len(piece))


def _loose_pattern(piece: str) -> re.Pattern[str]:
    """Match the piece's words with any white space between them."""
    return re.compile(r"\s+".join(re.escape(word) for word in piece.split()))
