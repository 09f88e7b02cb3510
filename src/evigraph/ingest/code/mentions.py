"""Passages that name a code symbol, linked to it: (:Chunk)-[:MENTIONS]->(:Function).

A passage links to a symbol when it holds the symbol's dotted name (`KnowledgeBase.retrieve`,
`evigraph.kb.core`) or, for a name distinctive enough to mean one thing, its bare name
(`MultiPathRetrieval`, `ingest_code`): long, with an underscore or inner capital, and held by one
symbol only. Bare common names (`run`, `search`) never link: in prose they are words.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from evigraph.code_records import CodeSymbol
from evigraph.store.base import GraphStore

MIN_DISTINCTIVE = 8
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
_PAGE = 200


def distinctive(name: str) -> bool:
    return (
        len(name) >= MIN_DISTINCTIVE
        and not name.startswith("__")
        and ("_" in name.strip("_") or bool(_INNER_CAPITAL.search(name)))
    )


def name_index(symbols: Iterable[CodeSymbol]) -> dict[str, list[str]]:
    """Every name a passage may use for a symbol -> the symbol ids it names."""
    index: dict[str, list[str]] = defaultdict(list)
    bare: dict[str, list[str]] = defaultdict(list)
    for s in symbols:
        if s.kind == "Module":
            if "." in s.name:
                index[s.name].append(s.id)
            continue
        index[f"{s.module}.{s.qualname}"].append(s.id)
        if "." in s.qualname:
            index[s.qualname].append(s.id)
        bare[s.name].append(s.id)
    for name, ids in bare.items():
        if len(ids) == 1 and distinctive(name):
            index.setdefault(name, ids)
    return index


def named_in(text: str, index: dict[str, list[str]]) -> set[str]:
    """Symbol ids `text` names: each dotted token and every dotted tail of it (`kb.KnowledgeBase.retrieve`)."""
    found: set[str] = set()
    for token in _DOTTED.findall(text):
        parts = token.split(".")
        for i in range(len(parts)):
            found.update(index.get(".".join(parts[i:]), ()))
    return found


async def link_passages(
    store: GraphStore,
    symbols: Sequence[CodeSymbol],
    documents: Sequence[str] | None = None,
    only: set[str] | None = None,
) -> list[tuple[str, str]]:
    """Link the passages of `documents` (every document when None) naming any of `symbols` (those
    in `only` when given: a name's uniqueness is judged among them all, the links made to these).

    Returns the (passage id, symbol id) pairs linked: a passage naming three symbols is three
    pairs, so count passages and symbols from them (`linked_counts`), not the pairs."""
    index = name_index(symbols)
    if only is not None:
        index = {name: kept for name, ids in index.items() if (kept := [i for i in ids if i in only])}
    if not index:
        return []
    keys = list(documents) if documents is not None else await _every_document(store)
    pairs: list[tuple[str, str]] = []
    for key in keys:
        for chunk in await store.document_passages(key):
            pairs += [(chunk.id, sid) for sid in sorted(named_in(chunk.text, index))]
    await store.link_code_mentions(pairs)
    return pairs


def linked_counts(pairs: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """(passages, symbols) among (passage id, symbol id) pairs, each counted once."""
    return len({p for p, _ in pairs}), len({s for _, s in pairs})


async def _every_document(store: GraphStore) -> list[str]:
    keys: list[str] = []
    while page := await store.list_documents(_PAGE, len(keys)):
        keys += [d.key for d in page]
    return keys
