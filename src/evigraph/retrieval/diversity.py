"""Many documents in the top of the list: one document cannot fill an answer, and a changelog does
not outrank the guide that explains the feature.

On the Starlette docs 13 of 50 top-5 slots were release notes: a changelog names every feature in
a line, so full-text search and the graph both find it for any question. A document holding the
answer needs one or two passages in the top k; more of it pushes out the other documents that
match, which is what a reader (or an agent with a budget) loses. So, over the candidates the
search found (never beyond them):

- no document takes more than `cap` places until every other candidate had its turn
  (`fusion.split_by_cap`, the rule entities use per label): when nothing else matched, the
  document fills the list as before;
- a changelog passage (a document whose title or file is CHANGES, CHANGELOG, HISTORY, NEWS or
  release notes) comes after the guides' passages of the same turn, unless the question asks
  about releases or versions: the guide's best passages first, then the changelog's, then the
  rest of the guide.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evigraph.evidence.items import PassageItem
from evigraph.retrieval.fusion import split_by_cap

_CHANGELOG_FILE = re.compile(
    r"(?:^|[/\\])(?:change[-_ ]?log|changes|history|news|release[-_ ]?notes?)(?:\.\w+)?$", re.I
)
_CHANGELOG_TITLE = re.compile(r"^(?:change ?log|changes|history|news|release notes?)$", re.I)
_ASKS_ABOUT_RELEASES = re.compile(
    r"\b(?:release[ds]?|version(?:s|ed)?|changelog|changes?d?|deprecat\w*|upgrad\w*|migrat\w*|new in)\b"
    r"|\bv?\d+\.\d+",
    re.I,
)


def is_changelog(passage: PassageItem) -> bool:
    """Whether the passage's document is a changelog or release notes, by its file or title."""
    source = passage.source
    return bool(_CHANGELOG_FILE.search(source.path or source.document_key) or _CHANGELOG_TITLE.match(source.title))


def diversify(passages: Sequence[PassageItem], question: str, limit: int, cap: int) -> list[PassageItem]:
    """The first `limit` of `passages` (best first), at most `cap` from one document until the
    other documents had their turn, changelogs after guides unless the question asks about releases.
    `cap` <= 0 leaves the order as it is."""
    if cap <= 0:
        return list(passages[:limit])
    turns, overflow = split_by_cap(passages, _document, cap)
    if not _ASKS_ABOUT_RELEASES.search(question):  # within each part, the guides first
        turns, overflow = _guides_first(turns), _guides_first(overflow)
    return [*turns, *overflow][:limit]


def _guides_first(passages: Sequence[PassageItem]) -> list[PassageItem]:
    return [p for p in passages if not is_changelog(p)] + [p for p in passages if is_changelog(p)]


def _document(passage: PassageItem) -> str:
    return passage.source.document_key
