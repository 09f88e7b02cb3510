"""The weak-match bench: answerable and no-answer halves of a dataset's questions, and the rates.

A question's answer is taken out of a knowledge base by deleting the documents of its gold
passages (each bench passage is one document, keyed by its corpus id) from a copy. One copy per
knowledge base serves a whole half: deleting each question's gold passages in turn would cost a
copy per question, and keeping the halves apart means no answerable question loses its answer.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def halves(questions: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(answerable, no-answer): the even and the odd questions, so each half spans the whole file."""
    return list(questions[0::2]), list(questions[1::2])


async def without_gold(source: Path, target: Path, held: Sequence[dict[str, Any]]) -> None:
    """A copy of the knowledge base at `source` at `target`, lacking every gold passage of `held`.

    `source` must be closed (its engine has written everything to the file). The copy is made
    under another name and renamed when complete, so a cut run never leaves a half-deleted one.
    """
    from evigraph.kb import KnowledgeBase

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    shutil.copyfile(source, partial)
    async with KnowledgeBase(partial, embedder="none") as kb:  # deleting needs no model
        for key in sorted({g for q in held for g in q["supporting_ids"]}):
            await kb.delete_document(key)
    partial.rename(target)


async def graph_without_gold(server: str, source: str, target: str, held: Sequence[dict[str, Any]]) -> None:
    """`without_gold` on a FalkorDB server (`falkordb://host:port`): graph `source` copied to
    `target` by the server (GRAPH.COPY), lacking every gold passage of `held`; kept if there.

    The deletions run on a scratch copy, copied to `target` only when complete, so a cut run
    never leaves a half-deleted one under the name a later run would reuse.
    """
    from evigraph.kb import KnowledgeBase
    from evigraph.store.falkordb.connection import Connection
    from evigraph.store.location import StoreLocation

    conn = Connection(StoreLocation.parse(f"{server}/{source}"), read_only=False)
    conn.open()
    try:
        graphs = set(conn.graphs())
        if target in graphs:
            return
        partial = f"{target}_partial"
        if partial in graphs:
            conn.command("GRAPH.DELETE", partial)
        conn.command("GRAPH.COPY", source, partial)
        async with KnowledgeBase(f"{server}/{partial}", embedder="none") as kb:  # deleting needs no model
            for key in sorted({g for q in held for g in q["supporting_ids"]}):
                await kb.delete_document(key)
        conn.command("GRAPH.COPY", partial, target)
        conn.command("GRAPH.DELETE", partial)
    finally:
        conn.close()


def flag_rate(flags: Sequence[bool]) -> float | None:
    """% of `flags` set, None for none."""
    return round(100 * sum(flags) / len(flags), 1) if flags else None
