"""Renaming document keys in place (`GraphStore.rename_documents`): the checks and row rewrites
both stores share.

A key is renamed, never re-ingested, so a folder moved or keyed anew keeps its passages, vectors
and extraction: passage ids stay as they were (they are opaque once written, and decisions cite
them), and only the places that name the document key change: the document, its passages'
`document`, the source log, the version counter, decision supports, and the JSON a step's
supports and a decision's review causes are kept in. The old key's version counter stays, so a
new document later given the old key numbers past every passage id the renamed one still holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from evigraph.errors import InputError


def checked_renames(renames: Mapping[str, str]) -> dict[str, str]:
    """`renames` without no-op pairs, refused when two keys would become one or a key is both
    renamed and a target (a chain whose order would decide the outcome)."""
    pairs = {old: new for old, new in renames.items() if old != new}
    for old, new in pairs.items():
        if not old or not new:
            raise InputError(f"cannot rename {old!r} to {new!r}: a key is never empty", "name both keys")
    targets: dict[str, str] = {}
    for old, new in pairs.items():
        if new in targets:
            raise InputError(
                f"{targets[new]} and {old} would both be renamed to {new}",
                "keep one of them: delete the other with `evigraph delete_document KEY`",
            )
        targets[new] = old
    chained = sorted(set(pairs) & set(targets))
    if chained:
        raise InputError(f"{chained[0]} is both renamed and a new key", "rename in two steps")
    return pairs


def collision(taken: list[str], renames: Mapping[str, str]) -> InputError:
    """Why a rename was refused because its new key is held by another document, and the fix."""
    back = {new: old for old, new in renames.items()}
    shown = ", ".join(f"{back[k]} -> {k}" for k in sorted(taken)[:3])
    more = f" (+{len(taken) - 3} more)" if len(taken) > 3 else ""
    return InputError(
        f"cannot rename {shown}{more}: the new key is already another document's; nothing was renamed",
        f"keep one of the two: delete the one you no longer want with `evigraph delete_document {sorted(taken)[0]}` "
        f"(or {back[sorted(taken)[0]]}), then run again",
    )


def renamed_json(text: str | None, renames: Mapping[str, str]) -> str | None:
    """A JSON list of records (step supports, review causes) with their `document` renamed; None
    when none names a renamed key, so unchanged rows are not written."""
    if not text:
        return None
    try:
        items = json.loads(text)
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    changed = False
    for item in items:
        if isinstance(item, dict) and isinstance(doc := item.get("document"), str) and doc in renames:
            item["document"] = renames[doc]
            changed = True
    return json.dumps(items) if changed else None


LEGACY_PREFIXES = ["file:/", *(f"file:{d}:/" for d in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")]
"""How a key from before roots begins (`ingest.roots.is_legacy_key`), as the stores' query takes it."""


def legacy_key_query(label: str) -> str:
    """One `label` row keyed by absolute path, if any: the stores' `holds_legacy_keys`."""
    return f"MATCH (x:{label}) WHERE any(p IN $prefixes WHERE x.key STARTS WITH p) RETURN x.key AS key LIMIT 1"
