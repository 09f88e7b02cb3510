"""Plain-function mirrors of the KnowledgeBase operations, for scripts without asyncio.

`evigraph.sync.ingest(...)` is `KnowledgeBase(...).ingest(...)` run to completion; the names
match the async methods and the CLI verbs.

Each opens the knowledge base, runs one operation and closes it, so the database is not held
between calls (another process may write in between).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from evigraph.kb import KnowledgeBase, Status
from evigraph.models import IngestReport


def ingest(
    sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
    *,
    db: str | os.PathLike[str] | None = None,
    text: str | None = None,
    key: str | None = None,
    title: str | None = None,
    progress: bool | None = None,
    **options: Any,
) -> IngestReport:
    """`KnowledgeBase(db, **options).ingest(...)` without an event loop."""

    async def run() -> IngestReport:
        async with KnowledgeBase(db, **options) as kb:
            return await kb.ingest(sources, text=text, key=key, title=title, progress=progress)

    return asyncio.run(run())


def delete_document(key: str, *, db: str | os.PathLike[str] | None = None, **options: Any) -> bool:
    async def run() -> bool:
        async with KnowledgeBase(db, **options) as kb:
            return await kb.delete_document(key)

    return asyncio.run(run())


delete = delete_document
"""The old name, kept for one release."""


def status(*, db: str | os.PathLike[str] | None = None, **options: Any) -> Status:
    async def run() -> Status:
        async with KnowledgeBase(db, read_only=True, **options) as kb:
            return await kb.status()

    return asyncio.run(run())
