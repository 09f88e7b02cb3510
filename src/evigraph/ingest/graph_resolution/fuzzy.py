"""Offline resolution at finalize: merge pairs whose names say they are one, no model needed."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from evigraph.ingest.candidates import CandidatePair
from evigraph.ingest.graph_resolution.base import GraphResolver, Judgement, PassageSource, labels_compatible
from evigraph.ingest.name_match import best_match, names_of
from evigraph.models import UNKNOWN_LABEL
from evigraph.store.merging import EntityRecord

FUZZY_THRESHOLD = 0.85
"""The name similarity (`name_match.best_match`) at or above which two entities are merged.

Measured by `bench/resolution.py` on the 6,310 distinct titles of the bench corpora (musique,
hotpotqa, 2wikimultihopqa: distinct Wikipedia articles, so two distinct titles are two things)
and 2,001 spelling variants made from a sample of them (1,355 with one typo in a word of five
letters or more, 646 with the first name cut to its initial). Of the 43,447 pairs of distinct
titles blocking proposed, 3 (0.007 %) score 0.85 or more, two of them arguably one thing ("SARS"
and "Severe acute respiratory syndrome", "Eagle claw" and "Eagles Claw"), while 88.3 % of typo
variants (all but one-word names, which get no typo rule) and every initial variant do. At 0.80
the false pairs are 7 (0.016 %) for 88.9 % of typos, at 0.75 19 for 89.8 %, at 0.90 2 for 88.3 %:
the name rules (the same form 1.0, a company suffix 0.97, initials 0.93, one typo 0.92, an
acronym 0.9) carry the merges, and 0.85 is where the character score alone adds almost no false
pair. On 1,942 HotpotQA passages (spaCy entities, 14,567 of them) it merges 143 entities; the
rules' limits in `name_match` (one-word typos, two-letter acronyms, Sr./Jr., another word in a
name's place) come from the wrong merges read in that run.
"""

ACRONYM_PASSAGES = 3
"""Passages read per entity of an acronym pair, looking for the two named together."""

AMBIGUOUS_RULES = frozenset({"initials", "acronym"})
"""Rules that expand: "J. Smith" may be John or Jane Smith, "ABC" a network or Adolfo Bioy Casares.
A pair matched by one of these is merged only when both entities have the same label (not
Unknown) and neither matches another partner by such a rule; an acronym only when a passage
names it beside its expansion. Measured on 1,942 HotpotQA passages (spaCy entities), without
these conditions: ABC was merged into Adolfo Bioy Casares, RCA into Russian Constituent Assembly."""


class FuzzyGraphResolution(GraphResolver):
    """Merges candidate pairs whose names match above `FUZZY_THRESHOLD`, with compatible labels.

    Labels must be equal, or one of them untyped; entities of two labels of one family (a
    product tagged Organization in one passage) are merged only under the same name. Vector
    cosines are not used: name vectors of two different people with similar names are close.
    Clusters are joined only when every pair across them matches (complete linkage), so a chain
    of near names (John Smith, Jon Smith, Jon Smyth, Jan Smyth) does not become one entity.
    """

    name = "fuzzy"

    def __init__(self, threshold: float = FUZZY_THRESHOLD) -> None:
        self.threshold = threshold
        self._ambiguous: set[str] = set()
        self._spelt_out: set[frozenset[str]] = set()

    async def judge(
        self, pairs: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], passages: PassageSource
    ) -> Judgement:
        partners: dict[str, set[str]] = defaultdict(set)
        for p in pairs:
            if p.reason in AMBIGUOUS_RULES and p.score >= self.threshold:
                partners[p.a].add(p.b)
                partners[p.b].add(p.a)
        self._ambiguous = {e for e, found in partners.items() if len(found) > 1}
        self._spelt_out = await _spelt_out(
            [p for p in pairs if p.reason == "acronym" and p.score >= self.threshold], entities, passages
        )
        judgement = Judgement()
        for p in pairs:
            if self._accepts(entities[p.a], entities[p.b], p.score, p.reason):
                judgement.same.append(p)
            else:
                judgement.different.append(p)
        return judgement

    def clusters(self, judgement: Judgement, entities: Mapping[str, EntityRecord]) -> list[list[str]]:
        """Complete linkage: strongest pairs first, two groups join when all their members match."""
        group: dict[str, list[str]] = {}
        for p in sorted(judgement.same, key=lambda p: (-p.score, p.a, p.b)):
            ga, gb = group.get(p.a, [p.a]), group.get(p.b, [p.b])
            if ga is gb or not all(
                self._match(entities[x], entities[y]) for x in ga for y in gb if (x, y) != (p.a, p.b)
            ):
                continue
            joined = sorted({*ga, *gb})
            for member in joined:
                group[member] = joined
        unique = {id(g): g for g in group.values()}
        return sorted(unique.values())

    def _match(self, a: EntityRecord, b: EntityRecord) -> bool:
        score, reason = best_match(names_of(a.name, a.aliases), names_of(b.name, b.aliases))
        return self._accepts(a, b, score, reason)

    def _accepts(self, a: EntityRecord, b: EntityRecord, score: float, reason: str) -> bool:
        if score < self.threshold:
            return False
        if reason in AMBIGUOUS_RULES:  # an expansion needs two types that agree, and no rival expansion
            typed = a.label == b.label != UNKNOWN_LABEL and a.id not in self._ambiguous and b.id not in self._ambiguous
            return typed and (reason != "acronym" or frozenset((a.id, b.id)) in self._spelt_out)
        if a.label == b.label or UNKNOWN_LABEL in (a.label, b.label):
            return True
        return reason == "same" and labels_compatible(a.label, b.label)


async def _spelt_out(
    pairs: Sequence[CandidatePair], entities: Mapping[str, EntityRecord], passages: PassageSource
) -> set[frozenset[str]]:
    """The acronym pairs some passage names together ("the National Hockey League (NHL)"): an
    acronym whose expansion is nowhere beside it may stand for anything with those initials."""
    texts = await passages.texts({i for p in pairs for i in (p.a, p.b)}, per_entity=ACRONYM_PASSAGES)
    found = set()
    for p in pairs:
        a, b = entities[p.a], entities[p.b]
        if any(_names(t, b) for t in texts.get(a.id, ())) or any(_names(t, a) for t in texts.get(b.id, ())):
            found.add(frozenset((a.id, b.id)))
    return found


def _names(text: str, entity: EntityRecord) -> bool:
    return any(
        re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text, re.IGNORECASE) for n in {entity.name, *entity.aliases} if n
    )
