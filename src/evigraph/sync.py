"""Plain-function mirrors of the KnowledgeBase operations, for scripts without asyncio.

`evigraph.sync.ingest(...)` is `KnowledgeBase(...).ingest(...)` run to completion; the names
match the async methods and the CLI verbs.

Each opens the knowledge base, runs one operation and closes it, so the database is not held
between calls (another process may write in between). They work inside a running event loop
too (a Jupyter notebook runs one): the operation then runs on its own loop in a worker thread,
since `asyncio.run` refuses to start under a running loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from evigraph.kb import KnowledgeBase, Status
from evigraph.models import IngestReport

if TYPE_CHECKING:
    from evigraph.retrieval.result import RetrievalResult

T = TypeVar("T")


def _run(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`, also from code already running under an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evigraph-sync") as pool:
        return pool.submit(asyncio.run, work).result()


def ingest(
    sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
    *,
    db: str | os.PathLike[str] | None = None,
    text: str | None = None,
    key: str | None = None,
    title: str | None = None,
    progress: bool | None = None,
    reextract: bool = False,
    include: str | Sequence[str] = (),
    exclude: str | Sequence[str] = (),
    encoding: str | None = None,
    max_llm_tokens: int | None = None,
    **options: Any,
) -> IngestReport:
    """`KnowledgeBase(db, **options).ingest(...)` without an event loop; `options` configure the
    knowledge base (extractor, embedder, ...), the named arguments the ingest."""

    async def run() -> IngestReport:
        async with KnowledgeBase(db, **options) as kb:
            return await kb.ingest(
                sources,
                text=text,
                key=key,
                title=title,
                progress=progress,
                reextract=reextract,
                include=include,
                exclude=exclude,
                encoding=encoding,
                max_llm_tokens=max_llm_tokens,
            )

    return _run(run())


def delete_document(key: str, *, db: str | os.PathLike[str] | None = None, **options: Any) -> bool:
    async def run() -> bool:
        async with KnowledgeBase(db, **options) as kb:
            return await kb.delete_document(key)

    return _run(run())


delete = delete_document
"""The old name, kept for one release."""


def status(*, db: str | os.PathLike[str] | None = None, **options: Any) -> Status:
    async def run() -> Status:
        async with KnowledgeBase(db, read_only=True, **options) as kb:
            return await kb.status()

    return _run(run())


def retrieve(
    question: str,
    *,
    db: str | os.PathLike[str] | None = None,
    paths: Sequence[str] | None = None,
    top_k: int = 10,
    expand_hops: int = 1,
    ranking: str = "graph",
    **options: Any,
) -> RetrievalResult:
    """`KnowledgeBase(db, **options).retrieve(question, ...)` without an event loop; the result's
    `to_context()` is the cited text for an LLM."""
    query: dict[str, Any] = {"paths": list(paths) if paths is not None else None, "top_k": top_k}
    query |= {"expand_hops": expand_hops, "ranking": ranking}

    async def run() -> RetrievalResult:
        async with KnowledgeBase(db, read_only=True, **options) as kb:
            return await kb.retrieve(question, **query)

    return _run(run())


search = retrieve
"""The CLI's verb for the same call."""
